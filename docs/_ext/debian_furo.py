"""Make Debian 12's furo theme work from a folder of files (file://, no web server).

Debian repacks furo without its webpack step (package furo 2022.12.07+dfsg-1), and two things
break in a browser (seen as console errors by tools/test_site.py):
  - styles/furo.css starts with `@import url(/javascript/normalize.css/normalize.css)`, a path
    that only a Debian web server aliases (to /usr/share/javascript, package node-normalize.css);
  - scripts/furo.js starts with `import Gumshoe from "./gumshoe-patched.js"` but is loaded as a
    classic script: "Cannot use import statement outside a module", so the theme's scripts
    (light/dark toggle, table-of-contents tracking, mobile menu) never run. ES modules would not
    load from file:// anyway.
After the HTML build this copies normalize.css next to furo.css and points the import at it, and
turns furo.js into one classic script: gumshoe (a UMD file that sets window.Gumshoe as a classic
script) followed by furo.js without its import line. A furo whose files are already bundled
(e.g. from PyPI) is left alone.
"""
import os
import re

from sphinx.util import logging

logger = logging.getLogger(__name__)
DEBIAN_JS_ROOT = "/usr/share/javascript"  # what Debian's web servers serve as /javascript


def fix_css(static: str) -> None:
    css_path = os.path.join(static, "styles", "furo.css")
    if not os.path.exists(css_path):
        return
    with open(css_path, encoding="utf-8") as f:
        css = f.read()
    match = re.search(r"@import url\((/javascript/[^)]+)\);?", css)
    if not match:
        return
    source = os.path.join(DEBIAN_JS_ROOT, match.group(1)[len("/javascript/"):])
    if not os.path.exists(source):
        logger.warning(f"furo.css imports {match.group(1)}, but {source} is missing (Debian package "
                       "node-normalize.css): the site will look unstyled in places")
        return
    name = os.path.basename(source)
    with open(source, encoding="utf-8") as f, open(os.path.join(static, "styles", name), "w", encoding="utf-8") as out:
        out.write(f.read())
    with open(css_path, "w", encoding="utf-8") as f:
        f.write(css.replace(match.group(0), f"@import url({name});", 1))


def fix_js(static: str) -> None:
    js_path = os.path.join(static, "scripts", "furo.js")
    if not os.path.exists(js_path):
        return
    with open(js_path, encoding="utf-8") as f:
        js = f.read()
    match = re.match(r'\s*import (\w+) from "\./([\w.-]+\.js)";\n', js)
    if not match:
        return
    name, module = match.groups()
    with open(os.path.join(static, "scripts", module), encoding="utf-8") as f:
        dependency = f.read()
    with open(js_path, "w", encoding="utf-8") as f:
        f.write(f"// {module} (sets window.{name}), then furo.js without its ES import: see docs/_ext/debian_furo.py\n")
        f.write(dependency + "\n;\n" + js[match.end():])


def on_build_finished(app, exception):
    if exception is None and app.builder.format == "html" and app.config.html_theme == "furo":
        static = os.path.join(app.outdir, "_static")
        fix_css(static)
        fix_js(static)


def setup(app):
    app.connect("build-finished", on_build_finished)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
