#!/usr/bin/env bash
# Install what decodebook needs from Debian 12's packages, skipping what is already there.
#
#   tools/install-deps.sh              # build, chapters, tests and grading
#   tools/install-deps.sh --docs       # also the course site and its browser test (CI uses it)
#   tools/install-deps.sh --reference  # also python3-torch & co., to retrain the model or
#                                      # regenerate the golden files (tests/reference/)
#   tools/install-deps.sh --fuzz       # also clang and libFuzzer, for tests/fuzz/ (CI uses it)
# The options combine.
# Runs apt-get as root (or through sudo). README.md says why each package is needed.
set -euo pipefail

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
      echo "install-deps: unknown option '$arg' (use --docs, --fuzz and/or --reference)" >&2
      exit 2
      ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
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
