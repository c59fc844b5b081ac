"""decodebook's own Sphinx directives: the site is generated from the course's files, never pasted.

.. exercise:: 00.1        an exercise where a chapter introduces it, from exercises/manifest.json:
                          title, points, the stub (from exercises/), a hint and, collapsed, the
                          worked answer (from solutions/)
.. exercise-list::        every exercise in the manifest, by chapter, with hints and links
.. api-reference::        one section per wing of lib/include/decodebook/, one per header (Breathe doxygenfile),
                          so each entity is rendered exactly once and new headers appear by themselves
.. readme-code:: TEXT     the first ```sh block after the README line containing TEXT
.. details:: SUMMARY      a collapsed <details> block (sphinx-togglebutton is not in Debian)
.. token-shading:: PROG   a text with each token on a background by its probability, from the
   ARGS...                rows of series "p" that `PROG ARGS... --csv FILE` writes (x: position,
                          y: p, label: the token's text); chapter 11's fortune
.. output-excerpt::       the lines of one command-output block from the first line containing
   :from: TEXT            :from: up to the line before the first later one containing :to: (or
   :to: TEXT              the end), the command's prompt line kept and "..." where lines are
                          cut; the output is whole to programoutput, so a page that shows a part
                          of a chapter's output reuses the chapter page's run (same command, one run)

Consistency checks (warnings, so fatal under `sphinx-build -W`): an excerpt whose :from: or :to:
is in no line of its output (the program changed: fix the page), every chapter folder has a page
docs/chapters/<folder>.rst (or is listed, for now, in conf.py's decodebook_pages_pending), and
every exercise in the manifest is introduced exactly once on its chapter's page.
"""
import csv
import glob
import html
import json
import math
import os
import re
import subprocess
import tempfile

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

logger = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------ helpers

def _root(env) -> str:
    return env.config.decodebook_root


def load_manifest(env) -> list:
    """The manifest's exercises, each with its hint tiers from the grader's file (tools/grader/hints.json)."""
    path = os.path.join(_root(env), "exercises", "manifest.json")
    hints_path = os.path.join(_root(env), "tools", "grader", "hints.json")
    if env.temp_data.get("docname"):  # inside a page: rebuild it when the manifest or the hints change
        env.note_dependency(path)
        env.note_dependency(hints_path)
    with open(path, encoding="utf-8") as f:
        exercises = json.load(f)["exercises"]
    with open(hints_path, encoding="utf-8") as f:
        hints = json.load(f)["hints"]
    for e in exercises:
        e["hint"] = hints.get(e["id"], [])
    return exercises


def inline_code(text: str) -> list:
    """Plain text with `backtick` spans (as the manifest's hints write code) to docutils nodes."""
    out = []
    for i, part in enumerate(re.split(r"`([^`]*)`", text)):
        if part:
            out.append(nodes.literal(part, part) if i % 2 else nodes.Text(part))
    return out


def label_for(exercise_id: str) -> str:
    return "exercise-" + exercise_id


def parse_rst(directive, lines: list, node: nodes.Element) -> None:
    source = directive.get_source_info()[0]
    content = StringList(lines, source=source)
    directive.state.nested_parse(content, directive.content_offset, node)


# ----------------------------------------------------------------------------------------- details

class details(nodes.General, nodes.Element):
    """<details><summary>...</summary> ... </details>"""


def visit_details_html(self, node):
    cls = " ".join(["db-details"] + node.get("classes", []))
    self.body.append(f'<details class="{html.escape(cls)}"><summary>{html.escape(node["summary"])}</summary>\n'
                     '<div class="db-details-body">\n')


def depart_details_html(self, node):
    self.body.append("</div></details>\n")


def visit_passthrough(self, node):
    pass


def depart_passthrough(self, node):
    pass


class DetailsDirective(SphinxDirective):
    """A collapsed block: the argument is the summary line, the content is hidden until opened."""
    required_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = {"class": directives.class_option}

    def run(self):
        node = details(summary=self.arguments[0], classes=self.options.get("class", []))
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


# --------------------------------------------------------------------------------------- exercises

class ExerciseDirective(SphinxDirective):
    """Introduce one exercise on a chapter page. Optional content: prose shown before the stub."""
    required_arguments = 1
    has_content = True

    def run(self):
        exercise_id = self.arguments[0]
        manifest = {e["id"]: e for e in load_manifest(self.env)}
        if exercise_id not in manifest:
            raise self.error(f"exercise {exercise_id} is not in exercises/manifest.json "
                             f"(known: {', '.join(manifest)})")
        e = manifest[exercise_id]
        if self.env.docname != f"chapters/{e['chapter_dir']}":
            raise self.error(f"exercise {exercise_id} belongs to chapter {e['chapter_dir']}; introduce it on "
                             f"docs/chapters/{e['chapter_dir']}.rst")
        store = getattr(self.env, "decodebook_exercises", {})
        store.setdefault(exercise_id, []).append(self.env.docname)
        self.env.decodebook_exercises = store

        label = label_for(exercise_id)
        node_id = nodes.make_id(label)
        title = f"Exercise {e['id']} · {e['title']}"
        points = f"{e['points']} point" + ("s" if e["points"] != 1 else "")
        self.env.get_domain("std").note_hyperlink_target(label, self.env.docname, node_id, title)

        box = nodes.container(classes=["db-exercise"], ids=[node_id])
        heading = nodes.paragraph(classes=["db-exercise-title"])
        heading += nodes.strong(title, title)
        heading += nodes.Text(f"  ({points})")
        box += heading
        files = ", ".join(f"``{f}``" for f in e["files"])
        parse_rst(self, [f"Edit {files} (you implement :cpp:func:`decodebook::{e['function']}`), "
                         f"rebuild, then check it with ``./grade {e['chapter']}``.", ""], box)
        self.state.nested_parse(self.content, self.content_offset, box)

        lines = []
        for f in e["files"]:
            lines += [f".. literalinclude:: /../{f}", "   :language: cpp", f"   :caption: {f} (your stub)", ""]
        # The hint's tiers (a nudge first), each folded on its own: open only as many as you need.
        tiers = e["hint"] if isinstance(e["hint"], list) else [e["hint"]]
        for i in range(len(tiers)):
            title = "Hint" if len(tiers) == 1 else f"Hint {i + 1} of {len(tiers)}"
            lines += [f".. details:: {title}", "   :class: db-hint", "", f"   HINT_PLACEHOLDER_{i}", ""]
        lines += [".. details:: Show solution", "   :class: db-solution", ""]
        for f in e["solution_files"]:
            lines += [f"   .. literalinclude:: /../{f}", "      :language: cpp", f"      :caption: {f}", ""]
        parse_rst(self, lines, box)
        # The hint is plain text with `code` spans: build its nodes directly (no RST escaping issues).
        for para in box.traverse(nodes.paragraph):
            if para.astext().startswith("HINT_PLACEHOLDER_"):
                tier = tiers[int(para.astext().rsplit("_", 1)[1])]
                para.children = []
                para += inline_code(tier)
        return [box]


class ExerciseListDirective(SphinxDirective):
    """Every exercise in course order, grouped by chapter, each linking to where it is introduced."""
    has_content = False

    def run(self):
        exercises = load_manifest(self.env)
        out = []
        chapter = None
        total = 0
        for e in exercises:
            pending = e["chapter_dir"] in self.config.decodebook_pages_pending
            if e["chapter"] != chapter:
                chapter = e["chapter"]
                doc = f"/chapters/{e['chapter_dir']}"
                rubric = nodes.rubric()
                text = f"Chapter {e['chapter']} · {e['chapter_title']}"
                if pending:
                    rubric += nodes.Text(text)
                else:
                    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=doc,
                                                refexplicit=True, refdoc=self.env.docname)
                    ref += nodes.inline(text, text)
                    rubric += ref
                out.append(rubric)
                if pending:
                    run = f"./chapter-{e['chapter']}"
                    note = nodes.paragraph()
                    note += nodes.Text("This chapter's page is not written yet; its program is: run ")
                    note += nodes.literal(run, run)
                    note += nodes.Text(" inside build/.")
                    out.append(note)
                items = nodes.bullet_list(classes=["db-exercise-list"])
                out.append(items)
            total += e["points"]
            item = nodes.list_item()
            line = nodes.paragraph()
            title = f"{e['id']} · {e['title']}"
            if pending:
                line += nodes.strong(title, title)
            else:
                ref = addnodes.pending_xref("", refdomain="std", reftype="ref", reftarget=label_for(e["id"]),
                                            refexplicit=True, refdoc=self.env.docname)
                ref += nodes.strong(title, title)
                line += ref
            points = f"{e['points']} point" + ("s" if e["points"] != 1 else "")
            line += nodes.Text(f" ({points}): edit ")
            for i, f in enumerate(e["files"]):
                if i:
                    line += nodes.Text(", ")
                line += nodes.literal(f, f)
            line += nodes.Text(", check with ")
            grade = f"./grade {e['chapter']}"
            line += nodes.literal(grade, grade)
            line += nodes.Text(".")
            item += line
            tiers = e["hint"] if isinstance(e["hint"], list) else [e["hint"]]
            for i, tier in enumerate(tiers):  # each tier folded on its own, a nudge first
                hint = details(summary="Hint" if len(tiers) == 1 else f"Hint {i + 1} of {len(tiers)}",
                               classes=["db-hint"])
                hint += nodes.paragraph("", "", *inline_code(tier))
                item += hint
            items += item
        summary = nodes.paragraph()
        summary += nodes.Text(f"{len(exercises)} exercises, {total} points in all. "
                              "This list is generated from ")
        summary += nodes.literal("exercises/manifest.json", "exercises/manifest.json")
        summary += nodes.Text(", the same file ./grade reads.")
        return [summary] + out


# ----------------------------------------------------------------------------------- API reference

def _text(element) -> str:
    return "".join(element.itertext()).strip() if element is not None else ""


def api_entities(xml_dir: str) -> dict:
    """Every public entity of the headers, from Doxygen's XML: {header: [(line, directive lines)]}.

    Namespace members (functions, typedefs, enums, variables) come from the namespace compounds,
    classes and structs from the namespaces' inner classes; each gets one Breathe directive, so
    each is rendered once. Overloaded functions get their parameter types, as Breathe needs.
    """
    import xml.etree.ElementTree as ET

    def parse(refid):
        return ET.parse(os.path.join(xml_dir, refid + ".xml")).getroot().find("compounddef")

    index = ET.parse(os.path.join(xml_dir, "index.xml")).getroot()
    namespaces = [c.get("refid") for c in index.findall("compound") if c.get("kind") == "namespace"]
    members, classes = [], []
    for refid in namespaces:
        compound = parse(refid)
        for member in compound.iter("memberdef"):
            if member.get("prot") == "public":
                members.append(member)
        for inner in compound.findall("innerclass"):
            if inner.get("prot") == "public":
                classes.append(parse(inner.get("refid")))

    functions = [m.findtext("qualifiedname") for m in members if m.get("kind") == "function"]
    out = {}
    for m in members:
        kind, name = m.get("kind"), m.findtext("qualifiedname")
        location = m.find("location")
        if kind == "function":
            target = name
            if functions.count(name) > 1:
                target += "(" + ", ".join(_text(p.find("type")) for p in m.findall("param")) + ")"
            lines = [f".. doxygenfunction:: {target}"]
        elif kind in ("typedef", "enum", "variable", "define"):
            lines = [f".. doxygen{kind}:: {name}"]
        else:
            continue
        out.setdefault(os.path.basename(location.get("file")), []).append((int(location.get("line")), lines))
    for c in classes:
        location = c.find("location")
        lines = [f".. doxygen{c.get('kind')}:: {c.findtext('compoundname')}", "   :members:"]
        out.setdefault(os.path.basename(location.get("file")), []).append((int(location.get("line")), lines))
    return out


def first_chapter(header_path: str) -> int:
    """The earliest chapter a header's comments name ("Introduced in chapter 00"), for ordering."""
    with open(header_path, encoding="utf-8") as f:
        found = [int(n) for n in re.findall(r"[Cc]hapters? (\d\d)", f.read())]
    return min(found, default=99)


WINGS = [  # (folder under lib/include/decodebook/, section title), in the order of the layers
    ("base", "base/: errors, UTF-8, the RNG, files"),
    ("model", "model/: GPT-2, its files, its cache and its kernels"),
    ("sampling", "sampling/: pure math on one logits vector"),
    ("decoding", "decoding/: the knob table, samplers, loops, stopping, beam search"),
    ("constrain", "constrain/: automata and token masks (chapter 09)"),
    ("course", "course/: what the chapters and programs share"),
    ("", "Your exercises"),
]


class ApiReferenceDirective(SphinxDirective):
    """One section per wing of lib/include/decodebook/, one subsection per public header (in the
    order the chapters introduce them): its description, then each entity once, in the header's order."""
    has_content = False

    def run(self):
        include = os.path.join(_root(self.env), "lib", "include", "decodebook")
        paths = glob.glob(os.path.join(include, "**", "*.hpp"), recursive=True)
        if not paths:
            raise self.error(f"no headers found in {include}")
        names = [os.path.basename(p) for p in paths]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:  # Doxygen and Breathe name a file by its base name
            raise self.error(f"two headers share the name {', '.join(twice)}: give each header its own name")
        wings = {w for w, _ in WINGS}
        stray = sorted(os.path.relpath(p, include) for p in paths if os.path.dirname(os.path.relpath(p, include)) not in wings)
        if stray:
            raise self.error(f"{', '.join(stray)} is in no wing the API page knows: add its folder to WINGS")
        xml_dir = self.config.breathe_projects[self.config.breathe_default_project]
        entities = api_entities(xml_dir)
        unknown = sorted(set(entities) - set(names))
        if unknown:
            raise self.error(f"Doxygen's XML ({xml_dir}) has entities from {', '.join(unknown)}, which is not in "
                             f"{include}: rerun Doxygen (cmake --build <build> --target docs does)")
        lines = []
        for wing, title in WINGS:
            in_wing = [p for p in paths if os.path.dirname(os.path.relpath(p, include)) == wing]
            if not in_wing:
                continue
            lines += [title, "-" * len(title), ""]
            for _, h, path in sorted((first_chapter(p), os.path.basename(p), p) for p in in_wing):
                self.env.note_dependency(path)
                label = os.path.relpath(path, include)
                lines += [label, "~" * len(label), "", f".. doxygenfile:: {h}",
                          "   :sections: briefdescription detaileddescription", ""]
                for _, directive in sorted(entities.get(h, []), key=lambda e: e[0]):
                    lines += directive + [""]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source=self.get_source_info()[0]), node)
        return node.children


# ------------------------------------------------------------------------------------- README code

class ReadmeCodeDirective(SphinxDirective):
    """The first fenced code block after the README line that contains the argument."""
    required_arguments = 1
    final_argument_whitespace = True

    def run(self):
        path = os.path.join(_root(self.env), "README.md")
        self.env.note_dependency(path)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        needle = self.arguments[0]
        start = next((i for i, line in enumerate(lines) if needle in line), None)
        if start is None:
            raise self.error(f"README.md has no line containing {needle!r}")
        fence = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("```")), None)
        end = next((i for i in range(fence + 1, len(lines)) if lines[i].startswith("```")), None) if fence else None
        if fence is None or end is None:
            raise self.error(f"README.md has no fenced code block after the line containing {needle!r}")
        language = lines[fence][3:].strip() or "text"
        code = "\n".join(lines[fence + 1:end])
        block = nodes.literal_block(code, code)
        block["language"] = language
        return [block]


# ---------------------------------------------------------------------------------- output excerpt

class OutputExcerptDirective(SphinxDirective):
    """A part of one `.. command-output::` block (the content): from the first line containing
    :from: to the line before the first later one containing :to:. Cut after programoutput has run
    the command (cut_excerpts), so the same command on two pages runs once."""
    has_content = True
    option_spec = {"from": directives.unchanged_required, "to": directives.unchanged}

    def run(self):
        node = nodes.container(classes=["db-excerpt"])
        node["excerpt_from"] = self.options.get("from", "")
        node["excerpt_to"] = self.options.get("to", "")
        if not node["excerpt_from"]:
            raise self.error("output-excerpt needs :from: TEXT, a text of the first line to show")
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


# --------------------------------------------------------------------------------- token shading

# (lowest p, background): the same four bands as chapter 11's terminal view (surprise.cpp)
SHADES = [(0.5, "#87ff87"), (0.1, "#ffffaf"), (0.01, "#ffaf87"), (0.0, "#ff8787")]


class TokenShadingDirective(SphinxDirective):
    """The tokens of a program's `--csv` rows of series "p", each on a background by its
    probability, with p and the surprise in bits as its tooltip. The program runs at build time
    (found on PATH, as command-output's), so the shading is the program's, never pasted."""
    required_arguments = 1
    optional_arguments = 20

    def run(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "rows.csv")
            try:
                subprocess.run([*self.arguments, "--csv", path], check=True, stdout=subprocess.DEVNULL, timeout=300)
            except (OSError, subprocess.SubprocessError) as e:
                raise self.error(f"token-shading: running {' '.join(self.arguments)} failed: {e}")
            with open(path, newline="", encoding="utf-8") as f:
                rows = [r for r in csv.DictReader(f) if r["series"] == "p"]
        if not rows:
            raise self.error(f"token-shading: {' '.join(self.arguments)} --csv wrote no rows of series 'p'")
        spans = []
        for r in rows:
            p = float(r["y"])
            colour = next(c for low, c in SHADES if p >= low)
            bits = -math.log2(p) if p > 0 else float("inf")
            text = html.escape(r["label"])  # newlines and tabs kept: the block is pre-wrap (decodebook.css)
            spans.append(f'<span style="background:{colour}" title="p {p:.4f}, surprise {bits:.2f} bits">{text}</span>')
        legend = " ".join(f'<span style="background:{c}">&nbsp;p &ge; {low:g}&nbsp;</span>' if low > 0 else
                          f'<span style="background:{c}">&nbsp;p &lt; 0.01&nbsp;</span>' for low, c in SHADES)
        body = f'<div class="db-shading"><p>{"".join(spans)}</p><p class="db-shading-legend">{legend}</p></div>'
        return [nodes.raw("", body, format="html")]


def printed_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """:printed:`20.0 tokens`: a figure in the prose that the page's program output must contain.
    Shown as plain text; check_printed fails the build when no output block on the page holds it."""
    node = nodes.inline(text, text, classes=["db-printed"])
    node["printed"] = text
    return [node], []


def squeeze(text: str) -> str:
    """Runs of spaces and line ends as one space: a figure wrapped in the prose or aligned in a table."""
    return re.sub(r"\s+", " ", text).strip()


def note_written_blocks(app, doctree):
    """Before programoutput runs: the page's own literal blocks (code, pasted text), which a
    :printed: figure may not lean on."""
    doctree["db_written_blocks"] = {id(b) for b in doctree.traverse(nodes.literal_block)}


def check_printed(app, doctree):
    """Every :printed: figure of a page is in one of the page's program outputs (the whole output,
    before output-excerpt cuts it), not in a block the page writes itself: a claim the binary no
    longer prints fails the build (issue 25)."""
    written = doctree.attributes.pop("db_written_blocks", set())
    outputs = [squeeze(b.astext()) for b in doctree.traverse(nodes.literal_block) if id(b) not in written]
    for node in doctree.traverse(nodes.inline):
        if "printed" not in node.attributes:
            continue
        figure = squeeze(node["printed"])
        if not any(figure in out for out in outputs):
            logger.warning(f"the page says {figure!r} as printed by a program, but no program output on this page "
                           "contains it: the binary prints something else now. Re-read the output and fix the "
                           "sentence (or the program)", location=node)


def excerpt_lines(lines: list, start_text: str, end_text: str) -> list:
    """lines[0] (the prompt line), then "..." and the lines from the first (after lines[0])
    containing start_text up to the first later one containing end_text, then "..." if cut.
    Raises ValueError naming the text that is in no line."""
    start = next((i for i in range(1, len(lines)) if start_text in lines[i]), None)
    if start is None:
        raise ValueError(f"no line of the output contains {start_text!r}")
    end = len(lines)
    if end_text:
        end = next((i for i in range(start + 1, len(lines)) if end_text in lines[i]), None)
        if end is None:
            raise ValueError(f"no line after {start_text!r} contains {end_text!r}")
    while end > start + 1 and not lines[end - 1].strip():  # no blank lines before the "..."
        end -= 1
    return [lines[0]] + (["..."] if start > 1 else []) + lines[start:end] + (["..."] if end < len(lines) else [])


def cut_excerpts(app, doctree):
    for node in list(doctree.traverse(nodes.container)):
        if "excerpt_from" not in node.attributes:
            continue
        blocks = list(node.traverse(nodes.literal_block))
        if len(blocks) != 1:
            logger.warning(f"output-excerpt holds {len(blocks)} output blocks: give it one command-output",
                           location=node)
            continue
        try:
            lines = excerpt_lines(blocks[0].astext().split("\n"), node["excerpt_from"], node["excerpt_to"])
        except ValueError as e:
            logger.warning(f"output-excerpt: {e} (did the program's output change? fix the page)", location=node)
            continue
        text = "\n".join(lines)
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        node.replace_self(block)


# ------------------------------------------------------------------------------------------ checks

def check_course(app, env):
    root = env.config.decodebook_root
    pending = set(env.config.decodebook_pages_pending)
    folders = sorted(os.path.basename(os.path.dirname(f)) for f in glob.glob(os.path.join(root, "chapters", "*", "")))
    for name in folders:
        has_page = f"chapters/{name}" in env.found_docs
        if not has_page and name not in pending:
            logger.warning(f"chapter {name} has no page on the course site: add docs/chapters/{name}.rst "
                           "(docs/chapters/00-naive-loop.rst shows the pattern), or, for now, list it in "
                           "decodebook_pages_pending in docs/conf.py")
        if has_page and name in pending:
            logger.warning(f"chapter {name} has a page now: remove it from decodebook_pages_pending in docs/conf.py")
    for name in sorted(pending - set(folders)):
        logger.warning(f"decodebook_pages_pending in docs/conf.py lists {name}, which is not in chapters/")
    seen = getattr(env, "decodebook_exercises", {})
    for e in load_manifest(env):
        pages = seen.get(e["id"], [])
        if not pages and e["chapter_dir"] not in pending:
            logger.warning(f"exercise {e['id']} ({e['title']}) is in exercises/manifest.json but no chapter page "
                           f"introduces it: add `.. exercise:: {e['id']}` to docs/chapters/{e['chapter_dir']}.rst")
        elif len(pages) > 1:
            logger.warning(f"exercise {e['id']} is introduced more than once: {', '.join(pages)}")


def missing_reference(app, env, node, contnode):
    """A C++ link in the prose that points nowhere (say, a renamed function) fails the build.
    Breathe's own pages link to std:: and xt:: types that are not documented here: not checked."""
    if node.get("refdomain") == "cpp" and node.get("refdoc") != "api":
        logger.warning(f"{node['refdoc']}: C++ reference {node['reftarget']!r} is not in the API reference",
                       location=node)
    return None


def purge_exercises(app, env, docname):
    store = getattr(env, "decodebook_exercises", {})
    for key in list(store):
        store[key] = [d for d in store[key] if d != docname]


def merge_exercises(app, env, docnames, other):
    store = getattr(env, "decodebook_exercises", {})
    for key, pages in getattr(other, "decodebook_exercises", {}).items():
        store.setdefault(key, []).extend(pages)
    env.decodebook_exercises = store


def setup(app):
    app.add_config_value("decodebook_root", "", "env")
    app.add_config_value("decodebook_pages_pending", [], "env")
    passthrough = (visit_passthrough, depart_passthrough)
    app.add_node(details, html=(visit_details_html, depart_details_html), latex=passthrough, text=passthrough,
                 man=passthrough, texinfo=passthrough)
    app.add_directive("details", DetailsDirective)
    app.add_directive("exercise", ExerciseDirective)
    app.add_directive("exercise-list", ExerciseListDirective)
    app.add_directive("api-reference", ApiReferenceDirective)
    app.add_directive("readme-code", ReadmeCodeDirective)
    app.add_directive("output-excerpt", OutputExcerptDirective)
    app.add_directive("token-shading", TokenShadingDirective)
    app.add_role("printed", printed_role)
    app.connect("doctree-read", note_written_blocks, priority=450)  # before programoutput's run_programs (500)
    app.connect("doctree-read", check_printed, priority=550)  # programoutput has run, excerpts not cut yet
    app.connect("doctree-read", cut_excerpts, priority=600)  # after programoutput's run_programs (500)
    app.connect("env-check-consistency", check_course)
    app.connect("missing-reference", missing_reference)
    app.connect("env-purge-doc", purge_exercises)
    app.connect("env-merge-info", merge_exercises)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
