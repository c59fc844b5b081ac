// decodebook self-check quizzes (docs/_ext/quiz.py writes the HTML).
// Click an answer: its feedback appears and the answer turns green or red. The score counts the
// FIRST answer you gave to each question; it is kept in this browser's localStorage (nothing is
// sent anywhere) and "Start over" forgets it.
(function () {
  "use strict";
  var STORE = "decodebook-quiz-v1";

  function load() {
    try {
      return JSON.parse(window.localStorage.getItem(STORE) || "{}") || {};
    } catch (e) {
      return {};  // storage disabled (private mode, some file:// setups): the quiz still works
    }
  }

  function save(state) {
    try {
      window.localStorage.setItem(STORE, JSON.stringify(state));
    } catch (e) { /* not fatal: the score just is not remembered */ }
  }

  function show(question, letter) {
    var correct = question.getAttribute("data-correct");
    question.querySelectorAll(".quiz-answer").forEach(function (button) {
      var mine = button.getAttribute("data-answer") === letter;
      button.classList.toggle("quiz-chosen", mine);
      button.classList.toggle("quiz-right", mine && letter === correct);
      button.classList.toggle("quiz-wrong", mine && letter !== correct);
      button.setAttribute("aria-pressed", mine ? "true" : "false");
    });
    question.querySelectorAll(".quiz-feedback").forEach(function (fb) {
      fb.hidden = fb.getAttribute("data-answer") !== letter;
    });
    var result = question.querySelector(".quiz-result");
    result.textContent = letter === correct ? "Correct." : "Not quite: read the feedback, then try another answer.";
    result.className = "quiz-result " + (letter === correct ? "quiz-result-right" : "quiz-result-wrong");
  }

  function clear(question) {
    question.querySelectorAll(".quiz-answer").forEach(function (button) {
      button.classList.remove("quiz-chosen", "quiz-right", "quiz-wrong");
      button.setAttribute("aria-pressed", "false");
    });
    question.querySelectorAll(".quiz-feedback").forEach(function (fb) { fb.hidden = true; });
    var result = question.querySelector(".quiz-result");
    result.textContent = "";
    result.className = "quiz-result";
  }

  function updateScore(quiz, state) {
    var questions = quiz.querySelectorAll(".quiz-question");
    var answered = 0, right = 0;
    questions.forEach(function (q) {
      var saved = state[q.getAttribute("data-question")];
      if (saved) {
        answered += 1;
        if (saved.first === q.getAttribute("data-correct")) right += 1;
      }
    });
    var text = quiz.querySelector(".quiz-score-text");
    if (answered === 0) {
      text.textContent = questions.length + " questions. Your score counts your first answer to each.";
    } else {
      text.textContent = "Score: " + right + " of " + questions.length + " right at the first try" +
        (answered < questions.length ? " (" + (questions.length - answered) + " still to answer)" : "") +
        ". Saved in this browser.";
    }
  }

  function setup(quiz) {
    var state = load();
    quiz.querySelectorAll(".quiz-question").forEach(function (question) {
      var id = question.getAttribute("data-question");
      if (state[id] && state[id].last) show(question, state[id].last);
      question.querySelectorAll(".quiz-answer").forEach(function (button) {
        button.addEventListener("click", function () {
          var letter = button.getAttribute("data-answer");
          var now = load();
          now[id] = { first: (now[id] && now[id].first) || letter, last: letter };
          save(now);
          show(question, letter);
          updateScore(quiz, now);
        });
      });
    });
    quiz.querySelector(".quiz-reset").addEventListener("click", function () {
      var now = load();
      quiz.querySelectorAll(".quiz-question").forEach(function (question) {
        delete now[question.getAttribute("data-question")];
        clear(question);
      });
      save(now);
      updateScore(quiz, now);
    });
    updateScore(quiz, state);
  }

  function init() {
    document.querySelectorAll(".quiz").forEach(setup);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
