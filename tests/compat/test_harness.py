"""The compatibility harness itself: the output comparison fails where it must, the import swap changes only
import lines, and the runner reports what each script printed and raised."""
import json
import subprocess
import sys

from harness import HERE, compare_outputs, header, last_error_line, numbers_match, swap_imports
from status import Differs, Fails, shows_expected_failure


def matches(theirs: str, ours: str, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    return not compare_outputs(theirs, ours, rtol, atol)


def test_numbers_within_tolerance_or_one_printed_unit_match():
    assert matches("loss 0.693147", "loss 0.693150")
    assert matches("tensor([-1.2247,  0.0000,  1.2247])", "tensor([-1.2248, -0.0000,  1.2247])")
    assert matches("7.05498", "7.05499") and matches("1e-05", "1.00001e-05")
    assert not matches("loss 0.693147", "loss 0.693547")
    assert not matches("1.2247", "1.2250")
    assert not numbers_match("nan", "0.0", 1e-4, 1e-5) and numbers_match("nan", "nan", 1e-4, 1e-5)


def test_integers_and_text_must_be_equal():
    assert not matches("Accuracy: 57/297", "Accuracy: 58/297")
    assert not matches("Predicted: cat", "Predicted: dog")
    assert not matches("[1, 2]", "[1, 2, 3]")
    assert not matches("True", "False")
    assert matches("a  b\t[1,  2]", "a b [1, 2]")  # whitespace (repr padding) aside


def test_line_counts_must_be_equal():
    problems = compare_outputs("1\n2\n", "1\n", 1e-4, 1e-5)
    assert problems == ["PyTorch printed 2 lines, tinynorm 1"]


def test_library_names_in_shapes_and_dtypes_are_one_form():
    assert matches("torch.Size([2, 3]) torch.float32 torch.int64", "tinynorm.Size([2, 3]) float32 int64")
    assert matches("tensor([1.], dtype=torch.float64)", "tensor([1.], dtype=tinynorm.float64)")
    assert not matches("torch.Size([2, 3])", "(2, 3)")
    assert not matches("torch.float32", "float64")


def test_swap_changes_only_import_lines():
    assert swap_imports("import torch\n") == "import tinynorm as torch\n"
    assert swap_imports("import torch.nn.functional as F\n") == "import tinynorm.nn.functional as F\n"
    assert swap_imports("from torch.utils.data import DataLoader\n") == "from tinynorm.utils.data import DataLoader\n"
    assert swap_imports("from torch import nn, optim\n") == "from tinynorm import nn, optim\n"
    assert swap_imports("x = torch.import_ir()\n") == "x = torch.import_ir()\n"
    assert swap_imports("import torchvision\n") == "import torchvision\n"


def test_headers_declare_requirements_and_tolerances():
    assert header("quickstart")["requires"] == "sklearn"
    assert header("tensor_basics") == {"rtol": 1e-4, "atol": 1e-5, "requires": ""}


def test_runner_reports_output_errors_and_exit(tmp_path):
    scripts = {"prints.py": "print('hello', 1.5)\nimport sys\nsys.exit(0)\n",
               "fails.py": "print('before')\nraise ValueError('stop')\n",
               "writes.py": "open('file.txt', 'w').write('x')\nprint(open('file.txt').read())\n",
               "swapped.py": "import torch\nprint(torch.__name__)\n"}
    for name, text in scripts.items():
        (tmp_path / name).write_text(text)
    results_file = tmp_path / "results.jsonl"
    subprocess.run([sys.executable, str(HERE / "runner.py"), "tinynorm", str(results_file),
                    *(str(tmp_path / name) for name in scripts)], check=True, cwd=tmp_path)
    results = {r["script"]: r for r in map(json.loads, results_file.read_text().splitlines())}
    assert results["prints.py"]["stdout"] == "hello 1.5\n" and results["prints.py"]["error"] is None
    assert results["fails.py"]["stdout"] == "before\n" and "ValueError: stop" in results["fails.py"]["error"]
    assert results["writes.py"]["stdout"] == "x\n" and not (tmp_path / "file.txt").exists()
    assert results["swapped.py"]["stdout"] == "tinynorm\n"  # the imports were swapped


def test_an_expected_failure_must_fail_in_the_way_its_entry_names():
    einsum = "AttributeError: module 'tinynorm' has no attribute 'einsum'"
    missing = Fails("missing torch.einsum", "has no attribute 'einsum'")
    assert shows_expected_failure(missing, einsum, [])
    assert not shows_expected_failure(Fails("missing torch.topk", "has no attribute 'topk'"), einsum, [])
    assert not shows_expected_failure(missing, "", [])
    differs = Differs("repr of a parameter", 3)
    assert shows_expected_failure(differs, "", ["PyTorch printed 4 lines, tinynorm 3", "line 3:\n ..."])
    assert not shows_expected_failure(differs, "", ["line 2:\n ...", "line 3:\n ..."])
    assert not shows_expected_failure(differs, "", []) and not shows_expected_failure(differs, einsum, [])


def test_the_exception_line_leaves_out_a_message_s_indented_lines():
    error = ('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    f()\n'
             "ValueError: Error(s) in loading state_dict for Small:\n  fc1.weight: shape (4, 3)\n")
    assert last_error_line({"error": error}) == "ValueError: Error(s) in loading state_dict for Small:"
    assert last_error_line({"error": None}) == ""


def test_report_names_each_status_and_the_entries_to_change(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE.parent.parent))  # the report runs as python -m tests.compat.report
    from tests.compat import harness as report_harness, report, status as report_status
    monkeypatch.setattr(report, "EXPECTED_FAILURES", {
        "missing_name": report_status.Fails("missing torch.einsum", "has no attribute 'einsum'"),
        "fixed_now": report_status.Fails("missing torch.topk", "has no attribute 'topk'"),
        "fails_otherwise": report_status.Fails("missing torch.topk", "has no attribute 'topk'")})
    monkeypatch.setattr(report_harness, "header", lambda name: {"rtol": 1e-4, "atol": 1e-5, "requires": ""})
    printed = {"error": None, "stdout": "1.0\n"}
    einsum = {"error": "AttributeError: module 'tinynorm' has no attribute 'einsum'\n", "stdout": ""}
    results = {"torch": dict.fromkeys(["missing_name", "fixed_now", "fails_otherwise", "plain"], printed),
               "tinynorm": {"missing_name": einsum, "fixed_now": printed, "fails_otherwise": einsum,
                            "plain": {"error": None, "stdout": "1.1\n"}}}
    assert report.status_of("missing_name", results) == ("expected failure", "missing torch.einsum")
    assert report.status_of("fixed_now", results)[0] == "PASSES NOW"
    word, reason = report.status_of("fails_otherwise", results)
    assert word == "FAILS" and "einsum" in reason and "expects: missing torch.topk" in reason
    assert report.status_of("plain", results)[0] == "FAILS"
    results["tinynorm"]["plain"] = printed
    assert report.status_of("plain", results) == ("pass", "")
