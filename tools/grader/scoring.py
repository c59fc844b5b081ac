"""Scoring: an exercise's state (pass, fail, not started, does not compile, ...) and its points,
from its tests' results and its chapter's build (all or nothing per exercise)."""
from dataclasses import dataclass


@dataclass
class BuildFailure:
    """A chapter whose test program did not build (or, with --no-build, is not built)."""
    chapter: str
    lines: list          # the compiler's first error and what follows, repository-relative
    mine: bool = True    # whether the errors mention exercises/ or solutions/ files
    kind: str = "does-not-compile"   # or "not-built"
    culprits: dict = None            # {exercise id: its own first error} when the compiler's file
                                     # names (or an undefined your_* function) tell whose it is

    @property
    def verdict(self):
        if self.kind == "not-built":
            return f"exercise_tests_{self.chapter} is not built: run ./grade without --no-build"
        if self.culprits:
            ids = " and ".join(self.culprits)
            return (f"{ids} {'does' if len(self.culprits) == 1 else 'do'} not compile: fix the first error above "
                    f"(chapter {self.chapter}'s tests run once every file they use compiles)")
        if self.mine:
            return f"chapter {self.chapter} does not compile: fix the first error above"
        return (f"the build of chapter {self.chapter} failed: fix the first error above "
                "(if it is not in your files, tell your instructor)")

    @property
    def message(self):
        return "\n".join(self.lines + ["", self.verdict] if self.lines else [self.verdict])


@dataclass
class ExerciseResult:
    info: dict           # the exercise's manifest entry
    tests: list
    failure: BuildFailure = None     # set when the exercise's chapter did not build
    violation: str = None            # set when it calls a library function it may not (call_violation)
    tier: int = 1                    # how many tiers of its hint a failure shows (hint_tier)

    @property
    def state(self):     # pass | fail | not-started | no-tests | does-not-compile | blocked | not-built | forbidden
        if self.failure:
            culprits = self.failure.culprits
            return "blocked" if culprits and self.info["id"] not in culprits else self.failure.kind
        if self.violation:
            return "forbidden"
        failed = [t for t in self.tests if t.outcome != "pass"]
        if not self.tests:
            return "no-tests"
        if not failed:
            return "pass"
        return "not-started" if all(t.not_started for t in failed) else "fail"

    @property
    def points(self):
        return self.info.get("points", 1)

    @property
    def earned(self):
        return self.points if self.state == "pass" else 0


def group_by_exercise(exercises, tests, failures=None, violations=None):
    """Manifest entries + test results (+ {chapter: BuildFailure} of the chapters that did not
    build, + {exercise id: message} of the exercises that call what they may not) -> ([ExerciseResult]
    in manifest order, stray tests)."""
    failures, violations = failures or {}, violations or {}
    by_id = {e["id"]: [] for e in exercises}
    strays = []
    for test in tests:
        by_id.get(test.exercise, strays).append(test)
    return [ExerciseResult(e, by_id[e["id"]], failures.get(e["chapter"]), violations.get(e["id"]))
            for e in exercises], strays


BUILD_STATES = {"does-not-compile": "does not compile", "blocked": "not graded", "not-built": "not built"}

FORBIDDEN = "calls a library function it may not"


def no_tests_message(exercise):
    return f"exercise {exercise.info['id']} has no tests — tell your instructor"
