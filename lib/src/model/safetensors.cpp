// Chapter 00: reading the weights. See safetensors.hpp for the format.
#include "decodebook/model/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "decodebook/base/error.hpp"
#include "decodebook/base/files.hpp"
#include "decodebook/model/config.hpp"
#include "decodebook/model/gpt2.hpp"

namespace decodebook {
namespace {

constexpr uint64_t kMaxHeader = 100u << 20;            // the format's own limit is 100 MB
constexpr uint64_t kMaxElements = uint64_t{1} << 48;  // far beyond any real tensor; keeps products exact
constexpr size_t kChunk = 1u << 15;                   // elements converted at a time (F16, BF16)
std::ostream* g_notes = nullptr;

const std::string kWeightsFix = "re-export the weights (models/training/train_model.py writes this format) "
                                "or point --model at a folder with a good model.safetensors";

// Bytes per element of every dtype the format defines; 0 for a name it does not define.
size_t dtype_width(const std::string& dtype) {
    if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
    if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
    if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
    if (dtype == "BOOL" || dtype == "U8" || dtype == "I8" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
    return 0;
}

std::string shape_text(const std::vector<size_t>& shape) {
    std::string s;
    for (size_t d : shape) {
        if (!s.empty()) s += ", ";
        s += std::to_string(d);
    }
    return "(" + s + ")";
}

// What every problem with the file's header reads as.
Error not_safetensors(const std::string& path, const std::string& problem) {
    return Error("'" + path + "' is not a valid safetensors file: " + problem, kWeightsFix);
}

// The first 8 bytes, little-endian: the header's length N, at most the format's 100 MB and what
// the file holds after them.
uint64_t read_header_length(std::ifstream& in, const std::string& path, uint64_t file_size) {
    if (file_size < 8) throw not_safetensors(path, "it is shorter than the 8-byte header length");
    unsigned char len[8];
    in.read(reinterpret_cast<char*>(len), 8);
    if (in.gcount() != 8) throw not_safetensors(path, "it is shorter than the 8-byte header length");
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len[i];
    if (header_len > kMaxHeader || header_len > file_size - 8) {
        throw not_safetensors(path, "header length " + std::to_string(header_len) + " is larger than the file (" +
                                        std::to_string(file_size) + " bytes)" +
                                        (header_len > kMaxHeader ? " or the format's 100 MB limit" : ""));
    }
    return header_len;
}

// The N bytes after the length (N checked against the file): a JSON object.
nlohmann::json read_header_json(std::ifstream& in, const std::string& path, uint64_t header_len) {
    std::string text(static_cast<size_t>(header_len), '\0');  // checked against the file
    in.read(text.data(), static_cast<std::streamsize>(header_len));
    if (static_cast<uint64_t>(in.gcount()) != header_len) throw not_safetensors(path, "the file ends inside its header");
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw not_safetensors(path, std::string("its header is not JSON (") + e.what() + ")");
    }
    if (!header.is_object()) throw not_safetensors(path, "its header is not a JSON object");
    return header;
}

// An entry's "shape": at most 64 non-negative whole numbers, into e.shape and e.count.
// `where` ("tensor 'NAME': ") starts each message.
void read_shape(const std::string& path, const std::string& where, const nlohmann::json& shape_json, TensorEntry& e) {
    if (!shape_json.is_array()) throw not_safetensors(path, where + "shape is not an array");
    if (shape_json.size() > 64) {
        throw not_safetensors(path, where + "shape has " + std::to_string(shape_json.size()) + " dimensions");
    }
    for (const auto& d : shape_json)  // first all numbers, so the message below may print the shape
        if (!d.is_number_unsigned()) throw not_safetensors(path, where + "shape has a non-integer or negative dimension");
    // The product of the non-zero dimensions bounds every stride: check it without overflow,
    // so even a zero-element tensor cannot carry an absurd dimension into xtensor.
    uint64_t nonzero_product = 1;
    bool has_zero = false;
    for (const auto& d : shape_json) {
        const uint64_t dim = d.get<uint64_t>();
        if (dim == 0) {
            has_zero = true;
        } else if (dim > kMaxElements / nonzero_product) {
            throw not_safetensors(path, where + "shape " + shape_json.dump() + " is impossibly large");
        } else {
            nonzero_product *= dim;
        }
        e.shape.push_back(static_cast<size_t>(dim));
    }
    e.count = has_zero ? 0 : nonzero_product;
}

// An entry's "data_offsets" [begin, end], into e.begin and e.end: within the data, and exactly
// e.count elements of `width` bytes.
void read_offsets(const std::string& path, const std::string& where, const nlohmann::json& offsets,
                  uint64_t data_size, size_t width, TensorEntry& e) {
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
        throw not_safetensors(path, where + "data_offsets must be two non-negative integers");
    }
    e.begin = offsets[0].get<uint64_t>();
    e.end = offsets[1].get<uint64_t>();
    if (e.begin > e.end || e.end > data_size) {
        throw not_safetensors(path, where + "data_offsets [" + std::to_string(e.begin) + ", " +
                                        std::to_string(e.end) + "] fall outside the " + std::to_string(data_size) +
                                        " data bytes");
    }
    if (e.end - e.begin != e.count * width) {  // count <= 2^48, width <= 8: no overflow
        throw not_safetensors(path, where + "data_offsets cover " + std::to_string(e.end - e.begin) +
                                        " bytes but shape and " + e.dtype + " need " + std::to_string(e.count * width));
    }
}

// One header entry, {"dtype", "shape", "data_offsets"}, checked in that order.
TensorEntry read_entry(const std::string& path, const std::string& name, const nlohmann::json& info,
                       uint64_t data_size) {
    const std::string where = "tensor '" + name + "': ";
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets")) {
        throw not_safetensors(path, where + "needs dtype, shape and data_offsets");
    }
    TensorEntry e;
    e.name = name;
    if (!info["dtype"].is_string()) throw not_safetensors(path, where + "dtype is not a string");
    e.dtype = info["dtype"].get<std::string>();
    const size_t width = dtype_width(e.dtype);
    if (width == 0) throw not_safetensors(path, where + "dtype " + e.dtype + " is not a safetensors dtype");
    read_shape(path, where, info["shape"], e);
    read_offsets(path, where, info["data_offsets"], data_size, width, e);
    return e;
}

// The data ranges must lie back to back: no byte read as two tensors, none belonging to none.
// `entries` sorted by their data.
void check_back_to_back(const std::string& path, const std::vector<TensorEntry>& entries, uint64_t data_size) {
    uint64_t at = 0;
    const TensorEntry* previous = nullptr;
    for (const TensorEntry& e : entries) {
        if (e.begin < at) {
            throw not_safetensors(path, "tensors '" + previous->name + "' and '" + e.name + "' overlap (data bytes [" +
                                            std::to_string(previous->begin) + ", " + std::to_string(previous->end) +
                                            ") and [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "))");
        }
        if (e.begin > at) {
            throw not_safetensors(path, "data bytes [" + std::to_string(at) + ", " + std::to_string(e.begin) +
                                            ") belong to no tensor (tensor '" + e.name + "' starts at " +
                                            std::to_string(e.begin) + ")");
        }
        at = e.end;
        previous = &e;
    }
    if (at != data_size) {
        throw not_safetensors(path, "the last " + std::to_string(data_size - at) + " of its " +
                                        std::to_string(data_size) + " data bytes belong to no tensor");
    }
}
}  // namespace

float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {  // inf or nan
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {  // normal
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {  // zero
        bits = sign;
    } else {  // subnormal: renormalise
        uint32_t e = 113;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float value) {
    const uint32_t f = std::bit_cast<uint32_t>(value);
    const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
    const uint32_t abs = f & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // inf or nan
        return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (abs < 0x38800000u) {  // subnormal half (or zero)
        const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // * 2^24
        return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
    }
    uint32_t bits = abs - 0x38000000u;  // rebias exponent 127 -> 15
    bits += 0xfffu + ((bits >> 13) & 1u);  // round to nearest even
    return static_cast<uint16_t>(sign | (bits >> 13));
}

float bf16_to_float(uint16_t bits) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
    const uint64_t file_size = check_regular_file(
        path, "model weights", std::numeric_limits<uint64_t>::max(),
        "check the path, or pass --model DIR with a folder holding model.safetensors");
    in_.open(path, std::ios::binary);
    if (!in_) {
        throw Error("cannot open model weights '" + path + "'",
                    "check the path, or pass --model DIR with a folder holding model.safetensors");
    }
    const uint64_t header_len = read_header_length(in_, path, file_size);
    const nlohmann::json header = read_header_json(in_, path, header_len);
    data_start_ = 8 + header_len;
    const uint64_t data_size = file_size - data_start_;
    for (const auto& [name, info] : header.items()) {
        if (name == "__metadata__") continue;
        entries_.push_back(read_entry(path, name, info, data_size));
    }
    // In the order of their data (entries()), which check_back_to_back walks.
    std::sort(entries_.begin(), entries_.end(), [](const TensorEntry& a, const TensorEntry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    check_back_to_back(path, entries_, data_size);
}

const TensorEntry* SafetensorsFile::find(const std::string& name) const {
    for (const TensorEntry& e : entries_)
        if (e.name == name) return &e;
    return nullptr;
}

void SafetensorsFile::read(const TensorEntry& e, float* out, uint64_t first, uint64_t n) {
    if (!e.readable()) {
        throw Error("'" + path_ + "': tensor '" + e.name + "' has dtype " + e.dtype +
                        ", which is not supported (only F32, F16, BF16)",
                    kWeightsFix);
    }
    if (first > e.count || n > e.count - first) throw std::logic_error("SafetensorsFile::read past the tensor");
    const enum class Kind { F32, F16, BF16 } kind = e.dtype == "F32" ? Kind::F32 : e.dtype == "F16" ? Kind::F16 : Kind::BF16;
    const uint64_t width = kind == Kind::F32 ? 4 : 2;
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(data_start_ + e.begin + first * width));
    const auto short_read = [&] {
        return Error("'" + path_ + "' ended while reading tensor '" + e.name + "' (was it truncated while open?)",
                     kWeightsFix);
    };
    if (kind == Kind::F32) {  // straight into the caller's buffer (the file is little-endian, like this machine)
        in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n * 4));
        if (static_cast<uint64_t>(in_.gcount()) != n * 4) throw short_read();
    } else {
        std::vector<uint16_t> chunk(static_cast<size_t>(std::min<uint64_t>(n, kChunk)));
        for (uint64_t done = 0; done < n;) {
            const size_t m = static_cast<size_t>(std::min<uint64_t>(n - done, kChunk));
            in_.read(reinterpret_cast<char*>(chunk.data()), static_cast<std::streamsize>(m * 2));
            if (static_cast<uint64_t>(in_.gcount()) != m * 2) throw short_read();
            float* dst = out + done;
            if (kind == Kind::F16) {
                for (size_t i = 0; i < m; ++i) dst[i] = half_to_float(chunk[i]);
            } else {
                for (size_t i = 0; i < m; ++i) dst[i] = bf16_to_float(chunk[i]);
            }
            done += m;
        }
    }
    bool finite = true;
    for (uint64_t i = 0; i < n; ++i) finite &= std::isfinite(out[i]);
    if (!finite) {
        uint64_t i = 0;
        while (std::isfinite(out[i])) ++i;
        throw Error("'" + path_ + "': tensor '" + e.name + "' holds " + (std::isnan(out[i]) ? "NaN" : "an infinity") +
                        " at element " + std::to_string(first + i) + " (of " + std::to_string(e.count) + ")",
                    "the checkpoint is damaged (or its training diverged): use a good copy of the weights");
    }
}

WeightArray SafetensorsFile::read(const TensorEntry& e) {
    if (!e.readable()) read(e, nullptr, 0, 0);  // throws the dtype error before allocating
    WeightArray t = WeightArray::from_shape(e.shape);
    read(e, t.data(), 0, e.count);
    return t;
}

void SafetensorsFile::read_halves(const TensorEntry& e, uint16_t* out, uint64_t first, uint64_t n) {
    if (e.dtype != "F16") {  // F32 or BF16: as float32 (checked finite), then rounded once
        std::vector<float> chunk(static_cast<size_t>(std::min<uint64_t>(n, kChunk)));
        for (uint64_t done = 0; done < n; done += chunk.size()) {
            const size_t m = static_cast<size_t>(std::min<uint64_t>(n - done, kChunk));
            read(e, chunk.data(), first + done, m);
            for (size_t i = 0; i < m; ++i) {
                out[done + i] = float_to_half(chunk[i]);  // round to nearest, ties to even
                if ((out[done + i] & 0x7c00u) == 0x7c00u) {
                    throw Error("'" + path_ + "': tensor '" + e.name + "' holds " + std::to_string(chunk[i]) +
                                    " at element " + std::to_string(first + done + i) +
                                    ", which float16 cannot hold (its largest value is 65504)",
                                "hold the weights in float32: --dtype f32");
                }
            }
        }
        return;
    }
    if (first > e.count || n > e.count - first) throw std::logic_error("SafetensorsFile::read_halves past the tensor");
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(data_start_ + e.begin + first * 2));
    in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n * 2));  // little-endian, as this machine
    if (static_cast<uint64_t>(in_.gcount()) != n * 2) {
        throw Error("'" + path_ + "' ended while reading tensor '" + e.name + "' (was it truncated while open?)",
                    kWeightsFix);
    }
    for (uint64_t i = 0; i < n; ++i) {
        if ((out[i] & 0x7c00u) == 0x7c00u) {  // the exponent's five bits all ones: infinity or NaN
            throw Error("'" + path_ + "': tensor '" + e.name + "' holds " + ((out[i] & 0x3ffu) ? "NaN" : "an infinity") +
                            " at element " + std::to_string(first + i) + " (of " + std::to_string(e.count) + ")",
                        "the checkpoint is damaged (or its training diverged): use a good copy of the weights");
        }
    }
}

TensorMap load_safetensors(const std::string& path) {
    SafetensorsFile file(path);
    for (const TensorEntry& e : file.entries()) {
        if (!e.readable()) {
            throw Error("'" + path + "' is not a valid safetensors file: tensor '" + e.name + "': dtype " + e.dtype +
                            " is not supported (only F32, F16, BF16)",
                        kWeightsFix);
        }
    }
    TensorMap tensors;
    for (const TensorEntry& e : file.entries()) tensors.emplace(e.name, file.read(e));
    return tensors;
}

void set_load_notes(std::ostream* out) { g_notes = out; }

namespace {

const std::string kSameModel = "config.json and model.safetensors must describe the same model";

using EntryByName = std::map<std::string, const TensorEntry*>;

// The file's tensors by their name without Hugging Face's "transformer." prefix.
EntryByName by_plain_name(const SafetensorsFile& file) {
    EntryByName by_name;
    for (const TensorEntry& e : file.entries()) {
        const std::string plain = e.name.rfind("transformer.", 0) == 0 ? e.name.substr(12) : e.name;
        if (!by_name.emplace(plain, &e).second) {
            throw Error("'" + file.path() + "' holds tensor '" + plain + "' twice (with and without 'transformer.')",
                        kWeightsFix);
        }
    }
    return by_name;
}

// Every tensor the model needs: present, of config.json's shape, in a dtype we read. Each found is
// taken out of `by_name` (which keeps the rest); returns them by schema name.
EntryByName take_schema_tensors(const std::string& path, const std::vector<TensorSpec>& schema, EntryByName& by_name) {
    EntryByName wanted;
    for (const TensorSpec& spec : schema) {
        const auto it = by_name.find(spec.name);
        if (it == by_name.end()) {
            throw Error("model weights have no tensor '" + spec.name + "'",
                        "use a GPT-2 checkpoint with Hugging Face tensor names (h.0.attn.c_attn.weight, ...)");
        }
        const TensorEntry& e = *it->second;
        if (e.shape != spec.shape) {
            throw Error("tensor '" + spec.name + "' has shape " + shape_text(e.shape) + " but config.json implies " +
                            shape_text(spec.shape),
                        kSameModel);
        }
        if (!e.readable()) {
            throw Error("'" + path + "': tensor '" + e.name + "' has dtype " + e.dtype +
                            ", which is not supported (only F32, F16, BF16)",
                        kWeightsFix);
        }
        wanted.emplace(spec.name, &e);
        by_name.erase(it);
    }
    return wanted;
}

// "h.N.rest", a block's tensor: rest, with N raised into `last_block`; "" for any other name.
// (Parsed by hand: std::regex recurses per character, and a name may be megabytes long.)
std::string block_tensor(const std::string& plain, long long& last_block) {
    if (plain.rfind("h.", 0) != 0) return "";
    size_t i = 2;
    long long n = 0;
    while (i < plain.size() && i < 11 && plain[i] >= '0' && plain[i] <= '9') n = n * 10 + (plain[i++] - '0');
    if (!(i > 2 && i < plain.size() && plain[i] == '.')) return "";
    last_block = std::max(last_block, n);
    return plain.substr(i + 1);
}

// The file's tensors outside the schema, classified by the rule: the causal-mask buffers and a tied
// lm_head are skipped; anything else is unused (an error naming it).
struct Leftovers {
    std::vector<std::string> skipped, unused;  // as the note and the error name them
    const TensorEntry* lm_head = nullptr;       // to check equal to wte.weight
    long long last_block = -1;                  // the highest N of any "h.N." tensor
};

Leftovers classify_leftovers(const EntryByName& rest, const EntryByName& wanted) {
    Leftovers out;
    for (const auto& [plain, e] : rest) {
        const std::string part = block_tensor(plain, out.last_block);
        if (part == "attn.bias" || part == "attn.masked_bias") {
            out.skipped.push_back(e->name + " (" + e->dtype + " " + shape_text(e->shape) + ", a causal mask)");
        } else if (plain == "lm_head.weight" && e->shape == wanted.at("wte.weight")->shape && e->readable()) {
            out.lm_head = e;
            out.skipped.push_back(e->name + " (checked equal to wte.weight: GPT-2 ties them)");
        } else {
            out.unused.push_back(e->name);
        }
    }
    return out;
}

// No block beyond n_layer, no tensor a GPT-2 does not use (the first five named).
void check_leftovers(const std::string& path, const ModelConfig& config, const Leftovers& rest) {
    if (rest.last_block >= config.n_layer) {
        throw Error("'" + path + "' holds blocks h.0 to h." + std::to_string(rest.last_block) + " (" +
                        std::to_string(rest.last_block + 1) + " layers) but config.json says n_layer " +
                        std::to_string(config.n_layer),
                    kSameModel + ": set n_layer to " + std::to_string(rest.last_block + 1) + " in config.json");
    }
    const std::vector<std::string>& unused = rest.unused;
    if (!unused.empty()) {
        std::string names;
        for (size_t i = 0; i < unused.size() && i < 5; ++i) names += (i ? ", '" : "'") + unused[i] + "'";
        if (unused.size() > 5) names += " and " + std::to_string(unused.size() - 5) + " more";
        throw Error("'" + path + "' holds " + std::to_string(unused.size()) + " tensor" +
                        (unused.size() > 1 ? "s" : "") + " a GPT-2 does not use: " + names,
                    "decodebook reads GPT-2 checkpoints (GPT2LMHeadModel); check that these weights are a GPT-2's");
    }
}

// The checkpoint's own dtype for the held matrices: F16 when every one is stored F16, else F32.
WeightDtype checkpoint_dtype(const std::vector<TensorSpec>& schema, const EntryByName& wanted) {
    bool all_f16 = true;
    for (const TensorSpec& spec : schema)
        if (spec.held) all_f16 &= wanted.at(spec.name)->dtype == "F16";
    return all_f16 ? WeightDtype::F16 : WeightDtype::F32;
}

// Read, in the file's order, straight into the tensors' final memory: a held matrix in out.dtype,
// every other tensor in float32.
void read_wanted(SafetensorsFile& file, const std::vector<TensorSpec>& schema, const EntryByName& wanted,
                 Gpt2Weights& out) {
    std::map<std::string, bool> held;  // schema name -> a matrix kept in out.dtype
    for (const TensorSpec& spec : schema) held[spec.name] = spec.held;
    for (const TensorEntry& e : file.entries()) {
        for (const auto& [name, entry] : wanted) {
            if (entry != &e) continue;
            if (held.at(name) && out.dtype == WeightDtype::F16) {
                HalfVector bits(static_cast<size_t>(e.count));
                file.read_halves(e, bits.data(), 0, e.count);
                out.matrices.emplace(name, std::move(bits));
            } else {
                out.tensors.emplace(name, file.read(e));
            }
        }
    }
}

// lm_head must equal wte: compare chunk by chunk, both read from the file: never a second V x C copy.
void check_tied(SafetensorsFile& file, const std::string& path, const TensorEntry& lm_head, const TensorEntry& wte) {
    std::vector<float> chunk(static_cast<size_t>(std::min<uint64_t>(lm_head.count, kChunk))), ours(chunk.size());
    for (uint64_t at = 0; at < lm_head.count; at += chunk.size()) {
        const uint64_t n = std::min<uint64_t>(chunk.size(), lm_head.count - at);
        file.read(lm_head, chunk.data(), at, n);
        file.read(wte, ours.data(), at, n);
        if (!std::equal(chunk.begin(), chunk.begin() + static_cast<long>(n), ours.begin())) {
            throw Error("'" + path + "': " + lm_head.name + " differs from wte.weight, but decodebook's GPT-2 "
                            "ties its output layer to the token embedding",
                        "use a GPT-2 checkpoint (its lm_head.weight is wte.weight)");
        }
    }
}

// One line on the load notes naming every skipped tensor.
void note_skipped(std::ostream& notes, const std::string& path, const std::vector<std::string>& skipped) {
    notes << "note: " << path << ": skipped " << skipped.size() << " tensor" << (skipped.size() > 1 ? "s" : "")
          << " the model does not read:";
    for (const std::string& s : skipped) notes << " " << s << ";";
    notes << std::endl;
}

}  // namespace

TensorMap load_gpt2_tensors(const std::string& path, const ModelConfig& config) {
    return load_gpt2_weights(path, config, WeightDtype::F32).tensors;
}

Gpt2Weights load_gpt2_weights(const std::string& path, const ModelConfig& config, std::optional<WeightDtype> dtype) {
    SafetensorsFile file(path);
    EntryByName by_name = by_plain_name(file);
    // 1. Every tensor the model needs: present, of config.json's shape, in a dtype we read.
    const std::vector<TensorSpec> schema = gpt2_tensor_schema(config);
    const EntryByName wanted = take_schema_tensors(path, schema, by_name);
    // 2. The rest: the causal-mask buffers and a tied lm_head are skipped; anything else is named.
    const Leftovers rest = classify_leftovers(by_name, wanted);
    check_leftovers(path, config, rest);
    // 3. The held matrices' dtype: the one asked for, else the checkpoint's own.
    Gpt2Weights out;
    out.dtype = dtype ? *dtype : checkpoint_dtype(schema, wanted);
    // 4. Read, in the file's order, straight into the tensors' final memory.
    read_wanted(file, schema, wanted, out);
    if (rest.lm_head) check_tied(file, path, *rest.lm_head, *wanted.at("wte.weight"));
    if (g_notes && !rest.skipped.empty()) note_skipped(*g_notes, path, rest.skipped);
    return out;
}

void save_safetensors(const std::string& path, const TensorMap& tensors, DType dtype) {
    const size_t width = dtype == DType::F32 ? 4 : 2;
    const char* name = dtype == DType::F32 ? "F32" : dtype == DType::F16 ? "F16" : "BF16";
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = 0;
    for (const auto& [key, t] : tensors) {
        const uint64_t bytes = t.size() * width;
        header[key] = {{"dtype", name},
                       {"shape", std::vector<size_t>(t.shape().begin(), t.shape().end())},
                       {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    header["__metadata__"] = {{"format", "pt"}, {"producer", "decodebook save_safetensors"}};
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::ofstream out(path, std::ios::binary);
    if (!out) throw Error("cannot write '" + path + "'", "check that the folder exists and is writable");
    uint64_t n = text.size();
    char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xffu);
    out.write(len, 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::vector<char> buffer;
    for (const auto& [key, t] : tensors) {
        buffer.resize(t.size() * width);
        for (size_t i = 0; i < t.size(); ++i) {
            const float v = t.data()[i];
            if (width == 4) {
                std::memcpy(buffer.data() + 4 * i, &v, 4);
            } else {
                const uint16_t h = dtype == DType::F16
                                       ? float_to_half(v)
                                       : static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
                std::memcpy(buffer.data() + 2 * i, &h, 2);
            }
        }
        out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    }
    if (!out) throw Error("writing '" + path + "' failed", "check free disk space");
}

}  // namespace decodebook
