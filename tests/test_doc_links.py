"""Every relative link in the project's Markdown resolves: the file exists, and an anchor
(``#heading``) names a heading of that file as GitHub spells it."""

import os
import re
import unicodedata

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading (github-slugger's rule): lower case; letters, marks,
    decimal and letter numbers, connector punctuation (``_``), spaces and ``-`` kept, in any
    script; everything else dropped (other dashes, symbols, ``²``); each space a ``-``."""
    text = re.sub(r"`", "", heading.strip().lower())
    kept = "".join(
        c
        for c in text
        if c in " -"
        or unicodedata.category(c)[0] in "LM"
        or unicodedata.category(c) in ("Nd", "Nl", "Pc")
    )
    return kept.replace(" ", "-")


def anchors(path: str) -> set[str]:
    """The anchors of ``path``'s headings (a repeated one also as ``-1``, ``-2``, ...)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
            m = None if fenced else re.match(r"#{1,6} (.+)", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                out.add(s if n == 0 else f"{s}-{n}")
                seen[s] = n + 1
    return out


def links(path: str):
    """``(line number, target)`` of each relative link of ``path`` outside code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if not re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                    yield n, target


def markdown_files():
    out = ["README.md", "WORKSPACE.md", "results/README.md"]
    for root, _dirs, names in os.walk(os.path.join(ROOT, "docs")):
        out += [os.path.relpath(os.path.join(root, n), ROOT) for n in names if n.endswith(".md")]
    return sorted(out)


def test_slug_follows_github():
    # by hand, character by character
    assert slug("Sequential MNIST sum (ICLR 2020 appendix) and MNIST addition (NALU §4.2)") == (
        "sequential-mnist-sum-iclr-2020-appendix-and-mnist-addition-nalu-42"
    )
    assert slug("Loss, regularisers and optimiser") == "loss-regularisers-and-optimiser"
    assert slug("dolor—sit—amet") == "dolorsitamet"  # an em dash is dropped, "-" kept
    assert slug("The z² cells: `seed_block`") == "the-z-cells-seed_block"
    assert slug("λ̂ figure") == "λ\u0302-figure"  # the combining hat is a mark: kept


def test_anchors_number_repeated_headings_and_skip_code(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# A b\n\n## A b\n\n```\n# not a heading\n```\n### C\n")
    assert anchors(str(doc)) == {"a-b", "a-b-1", "c"}


@pytest.mark.parametrize("name", markdown_files())
def test_relative_links_resolve(name):
    path = os.path.join(ROOT, name)
    broken = []
    for n, target in links(path):
        file, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        if not os.path.exists(dest):
            broken.append(f"{name}:{n}: {target} (no such file)")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            broken.append(f"{name}:{n}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
