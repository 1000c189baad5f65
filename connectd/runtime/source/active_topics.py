"""The topics a source task's query has written to (KIP-558), in a file beside its run directory.

The query's reader appends a topic the first time a batch writes to it; the herder reads the
file when asked (``GET /connectors/{c}/topics``), asks for a new list with a reset marker the
reader removes at its next batch, and folds the list into its store when the task stops.
"""

from __future__ import annotations

import os

__all__ = ["active_topics_file", "read_active_topics", "record_topics", "remove_active_topics", "reset_active_topics",
           "reset_marker"]


def active_topics_file(run_dir: str | os.PathLike[str]) -> str:
    """Where the query running in *run_dir* lists the topics it has written to, one per line."""
    return f"{os.fspath(run_dir)}.topics"


def reset_marker(topics_file: str) -> str:
    return f"{topics_file}.reset"


def read_active_topics(run_dir: str | os.PathLike[str]) -> set[str]:
    """The topics listed for the query of *run_dir*: none while a reset is waiting for its next batch."""
    path = active_topics_file(run_dir)
    if os.path.exists(reset_marker(path)):
        return set()
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return set()
    # A line still being appended has no newline yet: it is read next time.
    return {line for line in text.split("\n")[:-1] if line}


def reset_active_topics(run_dir: str | os.PathLike[str]) -> None:
    """Ask the query of *run_dir* to start its list again (the marker the reader removes)."""
    path = active_topics_file(run_dir)
    with open(reset_marker(path), "a", encoding="utf-8"):
        pass


def remove_active_topics(run_dir: str | os.PathLike[str]) -> None:
    """Remove the files of a query that has stopped."""
    path = active_topics_file(run_dir)
    for name in (path, reset_marker(path)):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


def record_topics(path: str, topics: set[str], written: set[str]) -> None:
    """Add to the file *path* the *topics* of a batch not listed before (*written*, which grows).

    A reset marker beside it makes the file this batch's topics alone (and *written* with it);
    then the marker goes, only once the file holds no topic from before the reset. Best effort:
    a file that cannot be written loses no data, and the topics are offered again with the next
    batch.
    """
    marker = reset_marker(path)
    try:
        if os.path.exists(marker):
            tmp = f"{path}.tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write("".join(f"{topic}\n" for topic in sorted(topics)))
            os.replace(tmp, path)
            written.clear()
            written.update(topics)
            os.unlink(marker)
            return
        new = topics - written
        if new:
            # Whole lines in one appending write; a line the herder catches half-written
            # has no newline yet and is left for its next read.
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("".join(f"{topic}\n" for topic in sorted(new)))
            written |= new
    except OSError:
        pass
