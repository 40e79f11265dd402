"""Tests counted as they finish (codebox_tui/runtime/test_progress.py): PHPUnit's TeamCity log read in chunks
of any size; what the sandbox writes that is not the log, or is out of bounds, counts for nothing."""

from __future__ import annotations

from codebox_tui.runtime.test_progress import MAX_COUNT, MAX_LINE_CHARS, TestTally, counted, strip_log_lines

LOG = """
##teamcity[testCount count='3' flowId='7']

##teamcity[testSuiteStarted name='ATest' flowId='7']

##teamcity[testStarted name='test_a' flowId='7']

##teamcity[testFinished name='test_a' duration='3' flowId='7']

##teamcity[testStarted name='test_b' flowId='7']

##teamcity[testFailed name='test_b' message='Failed asserting that false is true.' flowId='7']

##teamcity[testFinished name='test_b' duration='3' flowId='7']

##teamcity[testStarted name='test_c' flowId='7']

##teamcity[testFinished name='test_c' duration='0' flowId='7']
"""


def _tally(text: str, size: int) -> tuple[TestTally, list[dict[str, int]]]:
    seen: list[dict[str, int]] = []
    tally = TestTally(lambda t: seen.append(t.summary()))
    for start in range(0, len(text), size):
        tally.feed(text[start : start + size])
    tally.finish()
    return tally, seen


def test_counts_rise_as_tests_finish_whatever_the_chunk_size() -> None:
    for size in (1, 5, 64, len(LOG)):
        tally, seen = _tally(LOG, size)
        assert (tally.total, tally.done, tally.failed) == (3, 3, 1)
        if size < len(LOG):  # fed as it was written: the counts were reported on the way
            assert seen == [
                {"done": 0, "failed": 0, "total": 3},
                {"done": 1, "failed": 0, "total": 3},
                {"done": 2, "failed": 1, "total": 3},
                {"done": 3, "failed": 1, "total": 3},
            ]
        else:
            assert seen == [{"done": 3, "failed": 1, "total": 3}]


def test_a_big_suite_reports_every_hundredth_and_its_last_test() -> None:
    text = "##teamcity[testCount count='1000']\n" + "##teamcity[testFinished name='t']\n" * 1000
    _, seen = _tally(text, 35)
    assert [s["done"] for s in seen] == list(range(0, 1001, 10))


def test_what_is_not_the_log_counts_for_nothing() -> None:
    hostile = (
        "noise ##teamcity[testFinished name='x']\n"  # not at the start of a line
        + "##teamcity[testFinished "
        + "x" * (MAX_LINE_CHARS + 10)
        + "\n"  # over-long: skipped whole
        + "##teamcity[testCount count='99999999']\n"  # out of bounds: clamped
        + "##teamcity[testCount count='2']\n"  # a second count is not PHPUnit's
        + "##teamcity[testFailed name='x']\n" * 5  # more failures than tests finished
        + "##teamcity[testFinished name='a']"
    )  # the last line, without its newline
    tally, _seen = _tally(hostile, 4096)
    assert (tally.total, tally.done, tally.failed) == (MAX_COUNT, 1, 1)


def test_the_log_lines_leave_what_the_suite_wrote_on_stderr() -> None:
    assert strip_log_lines(LOG) == ""
    assert strip_log_lines("PHP Warning: x\n" + LOG + "after\n") == "PHP Warning: x\nafter\n"
    assert strip_log_lines("plain\n") == "plain\n"


def test_counted_shows_only_small_whole_numbers() -> None:
    assert counted({"done": 7, "total": 12, "failed": 1}) == "7/12, 1 failed"
    assert counted({"done": 7}) == "7"
    assert counted({"done": True, "total": 2}) is None and counted({"done": -1}) is None
    assert counted({"done": 3, "total": "[b]12"}) == "3" and counted(["done"]) is None
