// Chapter 00: writing the chapters' --csv files.
#include "decodebook/course/csv.hpp"

#include "decodebook/base/error.hpp"

namespace decodebook {

CsvFile::CsvFile(const std::string& path, const std::string& header) : path_(path), out_(path) {
    if (!out_) throw Error("cannot write the --csv file '" + path + "'", "pass a path in a folder that exists and is writable");
    out_ << header << '\n';
}

void CsvFile::close() {
    if (!out_.flush()) throw Error("writing the --csv file '" + path_ + "' failed", "check the disk space and permissions");
    out_.close();
}

std::string csv_quoted(const std::string& text) {
    std::string field = "\"";
    for (char c : text) field += c == '"' ? std::string("\"\"") : std::string(1, c);
    return field + '"';
}

void write_series_csv(const std::string& path, const std::string& columns, const SeriesRows& rows) {
    CsvFile csv(path, columns);
    for (const auto& [series, xy] : rows) csv.out() << series << ',' << xy.first << ',' << xy.second << '\n';
    csv.close();
}

void write_labelled_csv(const std::string& path, const std::string& columns, const LabelledRows& rows) {
    CsvFile csv(path, columns);
    for (const LabelledRow& r : rows) csv.out() << r.series << ',' << r.x << ',' << r.y << ',' << csv_quoted(r.label) << '\n';
    csv.close();
}

}  // namespace decodebook
