"""Self-check quizzes without a server: multiple choice with feedback, score kept in localStorage.

    .. quiz:: ch00

       .. question:: cost
          :answer_a: The model warms up, so later steps are faster.
          :feedback_a: No: look at the table, later steps are slower.
          :answer_b: Each step runs the whole, longer sequence through the model.
          :feedback_b: Yes: step t forwards t tokens.
          :correct: b

          Why does each step of the naive loop cost more than the one before?

Answers and feedback are one line of inline reStructuredText each (``code`` and :math:`x` work);
the question itself is any reStructuredText. Options answer_a ... answer_f, with a feedback for
each. The page shows the answers in an order shuffled per question (seeded by the page, quiz and
question ids, so every build shows the same order) and letters them A, B, C in that order: where
the author wrote the right answer tells the reader nothing. The build fails when one position
holds the right answer of more than half the site's questions. The behaviour lives in docs/_static/quiz.js and the look in docs/_static/quiz.css; the
schema follows Runestone's `mchoice` (answer_X / feedback_X / correct).
"""
import hashlib
import html
import random
import string

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

LETTERS = string.ascii_lowercase[:6]


class quiz(nodes.General, nodes.Element):
    pass


class quiz_question(nodes.General, nodes.Element):
    pass


class quiz_prompt(nodes.General, nodes.Element):
    pass


class quiz_answers(nodes.General, nodes.Element):
    pass


class quiz_answer(nodes.General, nodes.Element):
    pass


class quiz_feedback(nodes.General, nodes.Element):
    pass


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def visit_quiz(self, node):
    self.body.append(f'<div class="quiz" data-quiz="{_attr(node["quiz_id"])}">\n'
                     f'<p class="quiz-title">{html.escape(node["title"])}</p>\n'
                     '<noscript><p>The quiz needs JavaScript to check your answers.</p></noscript>\n')


def depart_quiz(self, node):
    self.body.append('<div class="quiz-score" aria-live="polite"><span class="quiz-score-text"></span>'
                     '<button type="button" class="quiz-reset">Start over</button></div>\n</div>\n')


def visit_question(self, node):
    self.body.append(f'<div class="quiz-question" data-question="{_attr(node["question_id"])}" '
                     f'data-correct="{_attr(node["correct"])}">\n')


def depart_question(self, node):
    self.body.append('<p class="quiz-result" aria-live="polite"></p>\n</div>\n')


def visit_prompt(self, node):
    self.body.append('<div class="quiz-prompt">\n')


def depart_prompt(self, node):
    self.body.append("</div>\n")


def visit_answers(self, node):
    self.body.append('<ol class="quiz-answers">\n')


def depart_answers(self, node):
    self.body.append("</ol>\n")


def visit_answer(self, node):
    letter = _attr(node["letter"])
    self.body.append(f'<li class="quiz-choice"><button type="button" class="quiz-answer" data-answer="{letter}">'
                     f'<span class="quiz-letter">{letter.upper()}</span> ')


def depart_answer(self, node):
    self.body.append("</button>")


def visit_feedback(self, node):
    self.body.append(f'<div class="quiz-feedback" data-answer="{_attr(node["letter"])}" hidden>')


def depart_feedback(self, node):
    self.body.append("</div></li>\n")


def visit_skip(self, node):
    raise nodes.SkipNode


class QuizDirective(SphinxDirective):
    """A group of questions with one score; the argument is an id unique on the site."""
    required_arguments = 1
    has_content = True
    option_spec = {"title": directives.unchanged}

    def run(self):
        quiz_id = self.arguments[0]
        seen = self.env.temp_data.setdefault("quiz_ids", set())
        if quiz_id in seen:
            raise self.error(f"quiz id {quiz_id!r} is used twice on this page")
        seen.add(quiz_id)
        # Scores are stored per question under "<page>:<quiz>:<question>", unique on the site.
        key = f"{self.env.docname}:{quiz_id}"
        node = quiz(quiz_id=key, title=self.options.get("title", "Check yourself"))
        self.env.temp_data["quiz_current"] = key
        self.state.nested_parse(self.content, self.content_offset, node)
        self.env.temp_data["quiz_current"] = None
        questions = [n for n in node.children if isinstance(n, quiz_question)]
        if not questions:
            raise self.error(f"quiz {quiz_id!r} has no questions")
        if len(questions) != len(node.children):
            raise self.error(f"quiz {quiz_id!r} may only contain `.. question::` directives")
        return [node]


class QuestionDirective(SphinxDirective):
    """One multiple-choice question; the content is the question."""
    required_arguments = 1
    has_content = True
    option_spec = dict({"correct": directives.unchanged_required},
                       **{f"answer_{c}": directives.unchanged_required for c in LETTERS},
                       **{f"feedback_{c}": directives.unchanged_required for c in LETTERS})

    def run(self):
        quiz_id = self.env.temp_data.get("quiz_current")
        if not quiz_id:
            raise self.error("`.. question::` must be inside a `.. quiz::`")
        letters = [c for c in LETTERS if f"answer_{c}" in self.options]
        if len(letters) < 2 or letters != list(LETTERS[:len(letters)]):
            raise self.error("a question needs answers a, b (, c ...) without gaps")
        correct = self.options.get("correct", "")
        if correct not in letters:
            raise self.error(f":correct: must be one of {', '.join(letters)}")
        if not self.content:
            raise self.error("the question text is missing (write it as the directive's content)")
        question_id = f"{quiz_id}:{self.arguments[0]}"
        order = shuffled(letters, question_id)  # the authored letters in the order shown
        shown = {c: LETTERS[i] for i, c in enumerate(order)}
        node = quiz_question(question_id=question_id, correct=shown[correct])
        prompt = quiz_prompt()
        self.state.nested_parse(self.content, self.content_offset, prompt)
        node += prompt
        answers = quiz_answers()
        for c in letters:
            if not self.options.get(f"feedback_{c}"):
                raise self.error(f"answer {c} has no :feedback_{c}: (say why it is right or wrong)")
        record_position(self.env, order.index(correct), len(letters))
        for c in order:
            feedback_text = self.options.get(f"feedback_{c}")
            answer = quiz_answer(letter=shown[c])
            text_nodes, messages = self.state.inline_text(self.options[f"answer_{c}"], self.lineno)
            answer.extend(text_nodes + messages)
            feedback = quiz_feedback(letter=shown[c])
            fb_nodes, fb_messages = self.state.inline_text(feedback_text, self.lineno)
            feedback.extend(fb_nodes + fb_messages)
            answers += answer
            answers += feedback
        node += answers
        return [node]


def shuffled(letters: list, question_id: str) -> list:
    """The answers' order on the page: a shuffle seeded by the question's id (the same every build)."""
    order = list(letters)
    random.Random(hashlib.sha256(question_id.encode()).hexdigest()).shuffle(order)
    return order


def record_position(env, position: int, answers: int) -> None:
    """Where the right answer of a question on this page is shown (0 = first), for check_positions."""
    if not hasattr(env, "quiz_positions"):
        env.quiz_positions = {}
    env.quiz_positions.setdefault(env.docname, []).append((position, answers))


def purge_positions(app, env, docname):
    if hasattr(env, "quiz_positions"):
        env.quiz_positions.pop(docname, None)


def merge_positions(app, env, docnames, other):
    if not hasattr(env, "quiz_positions"):
        env.quiz_positions = {}
    for docname, items in getattr(other, "quiz_positions", {}).items():
        if docname in docnames:
            env.quiz_positions[docname] = items


def check_positions(app, env):
    """Fail the build when one position holds the right answer of more than half the questions."""
    items = [item for doc in sorted(getattr(env, "quiz_positions", {})) for item in env.quiz_positions[doc]]
    if not items:
        return
    counts = {}
    for position, _ in items:
        counts[position] = counts.get(position, 0) + 1
    position, most = max(counts.items(), key=lambda kv: kv[1])
    if most * 2 > len(items):
        raise ExtensionError(f"quiz: answer {LETTERS[position].upper()} is the right one in {most} of {len(items)} "
                             "questions: a reader could guess it (change a question's id or its answers)")


def setup(app):
    html_only = {"latex": (visit_skip, None), "text": (visit_skip, None), "man": (visit_skip, None),
                 "texinfo": (visit_skip, None)}
    app.add_node(quiz, html=(visit_quiz, depart_quiz), **html_only)
    app.add_node(quiz_question, html=(visit_question, depart_question))
    app.add_node(quiz_prompt, html=(visit_prompt, depart_prompt))
    app.add_node(quiz_answers, html=(visit_answers, depart_answers))
    app.add_node(quiz_answer, html=(visit_answer, depart_answer))
    app.add_node(quiz_feedback, html=(visit_feedback, depart_feedback))
    app.connect("env-purge-doc", purge_positions)
    app.connect("env-merge-info", merge_positions)
    app.connect("env-check-consistency", check_positions)
    app.add_directive("quiz", QuizDirective)
    app.add_directive("question", QuestionDirective)
    app.add_js_file("quiz.js")
    app.add_css_file("quiz.css")
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
