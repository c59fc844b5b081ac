# Sphinx configuration of the decodebook course site.
#
# Build it with `cmake --build build --target docs` (docs/CMakeLists.txt): that target runs
# Doxygen first and passes two folders in the environment:
#   DECODEBOOK_DOXYGEN_XML  Doxygen's XML of lib/include/decodebook/**/*.hpp (read by Breathe)
#   DECODEBOOK_BIN_DIR      the folder with the chapter binaries (put on PATH, so that
#                           program-output and the plots run the chapters you just built)
import os
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCS)
sys.path.insert(0, os.path.join(DOCS, "_ext"))


def _required_env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise RuntimeError(f"{name} is not set: build the site with `cmake --build build --target docs`, "
                           "which runs Doxygen and passes the chapter binaries' folder")
    return value


project = "decodebook"
author = "the decodebook authors"
copyright = "decodebook authors"
html_title = "decodebook: from logits to text"

extensions = [
    "breathe",
    "sphinxcontrib.programoutput",
    "sphinx_copybutton",
    "sphinx.ext.mathjax",
    "matplotlib.sphinxext.plot_directive",
    "decodebook_site",  # docs/_ext: exercises from the manifest, <details>, API pages, checks
    "quiz",             # docs/_ext: self-check quizzes, scores in localStorage
    "debian_furo",      # docs/_ext: Debian's unbundled furo, made to work from file://
]

exclude_patterns = ["_build", "design.md", "Doxyfile.in", "CMakeLists.txt"]
primary_domain = "cpp"
highlight_language = "cpp"
nitpicky = False

# --- decodebook_site: where the course lives
decodebook_root = ROOT
# Chapters that exist in chapters/ but have no page here yet. The build fails for any other
# chapter without a page, and for a listed one once its page exists: keep this list honest.
decodebook_pages_pending = []

# --- Breathe: the API reference from Doxygen's XML
breathe_projects = {"decodebook": _required_env("DECODEBOOK_DOXYGEN_XML")}
breathe_default_project = "decodebook"
breathe_default_members = ("members",)
breathe_show_include = True

# --- Real output: the chapters run during the build, from the build folder
os.environ["PATH"] = _required_env("DECODEBOOK_BIN_DIR") + os.pathsep + os.environ.get("PATH", "")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Shown as students type it inside build/.
programoutput_prompt_template = "$ ./{command}\n{output}"

# --- Plots drawn from data the chapter binaries write (docs/plots/*.py run them)
plot_basedir = DOCS
plot_formats = [("png", 110)]
plot_html_show_formats = False
plot_html_show_source_link = False
plot_include_source = False
plot_rcparams = {"figure.figsize": (8, 3.6), "font.size": 10}

# --- HTML: furo, everything served locally (MathJax is vendored: no CDN, works offline)
html_theme = "furo"
html_static_path = ["_static"]
html_css_files = ["decodebook.css"]
mathjax_path = "mathjax/tex-svg.js"
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
copybutton_prompt_text = "$ "
