#!/usr/bin/env python3
"""A session picker that reads windows, the baseline of `ls/cold` that issue #11 measured.

For each `<project>/<session>.jsonl` under PROJECTS: the first and the last 64 KiB, every
complete line of both windows parsed with `json.loads`; the title is the last custom title or
summary of the tail, else the first user prompt of the head; the first and the last timestamp
are the created and modified times. Sorted newest first. No index, no cache, and no message
count (a window does not see the whole file).

Usage: window-lister.py PROJECTS ROUNDS
Prints the median milliseconds of ROUNDS listings (the interpreter's start is not counted)
and how many sessions one listing found.
"""

import json
import os
import sys
import time

WINDOW = 64 * 1024


def lines(chunk, head):
    """The complete lines of a window (a cut first line of a tail window is dropped)."""
    parts = chunk.split(b"\n")
    if not head:
        parts = parts[1:]
    for raw in parts:
        if not raw.strip():
            continue
        try:
            yield json.loads(raw)
        except ValueError:
            continue


def prompt_of(entry):
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                return block.get("text")
    return None


def session(path):
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(WINDOW)
        if size > WINDOW:
            f.seek(size - WINDOW)
            tail = f.read(WINDOW)
        else:
            tail = head
    title = None
    last = None
    for e in lines(tail, size <= WINDOW):
        if e.get("type") == "custom-title" and e.get("customTitle"):
            title = e["customTitle"]
        elif e.get("type") == "summary" and e.get("summary") and title is None:
            title = e["summary"]
        last = e.get("timestamp") or last
    first = None
    prompt = None
    for e in lines(head, True):
        first = first or e.get("timestamp")
        if prompt is None and e.get("type") == "user":
            prompt = prompt_of(e)
        if first and prompt:
            break
    return (last or "", first or "", title or prompt or "(session)", path)


def listing(projects):
    rows = []
    for project in os.scandir(projects):
        if not project.is_dir():
            continue
        for entry in os.scandir(project.path):
            if entry.name.endswith(".jsonl") and entry.is_file():
                rows.append(session(entry.path))
    rows.sort(key=lambda r: r[0], reverse=True)
    return rows


def main():
    projects, rounds = sys.argv[1], int(sys.argv[2])
    times = []
    found = 0
    for _ in range(rounds):
        start = time.perf_counter()
        found = len(listing(projects))
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    print(f"{times[len(times) // 2]:.3f} {found}")


if __name__ == "__main__":
    main()
