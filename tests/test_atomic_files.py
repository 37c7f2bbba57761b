"""Files written whole or not at all: the old file survives a writer that fails, and nothing temporary is left."""

import pytest

from langgraph_memagent.agents.atomic_files import replacing, temporary_beside, write_atomic


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "results.json"
    write_atomic(target, "old")
    with pytest.raises(KeyboardInterrupt), replacing(target) as file:
        file.write("half of the new")
        raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert [path.name for path in tmp_path.iterdir()] == ["results.json"]


def test_a_path_writer_gets_a_path_with_its_ending_in_a_folder_made_for_it(tmp_path):
    target = tmp_path / "new" / "folder" / "package.pt2"
    with temporary_beside(target, suffix=".pt2") as temporary:
        assert temporary.parent == target.parent and temporary.name.endswith(".pt2") and temporary.name != target.name
        temporary.write_bytes(b"package")
    assert target.read_bytes() == b"package"
    assert target.stat().st_mode & 0o777 == 0o644  # readable by all, as a plain open() makes it
    assert [path.name for path in target.parent.iterdir()] == ["package.pt2"]


def test_lines_are_written_one_after_another(tmp_path):
    assert write_atomic(tmp_path / "a.jsonl", (f"{n}\n" for n in range(3))).read_text() == "0\n1\n2\n"
