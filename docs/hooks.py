"""MkDocs hook (mkdocs.yml `hooks:`): the site shows GALLERY.md and REPRODUCTION.md, which stay at the
repository root (tools regenerate them), and the results/ files the pages link to, without a second
copy in git. Links written for GitHub (from docs/: ../REPRODUCTION.md, ../results/x.png) are mapped
to their place in the site."""
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
ROOT_PAGES = {"GALLERY.md": "gallery.md", "REPRODUCTION.md": "reproduction.md", "README.md": "index.md"}
LINK = re.compile(r"\]\(([^)\s#]+)")
_outside = {}  # site path -> repository path of the pages whose source lies outside docs/


def _repo_path(src_uri: str, target: str) -> str:
    """The repository path a page's relative link points at (links are relative to the source file)."""
    source = _outside.get(src_uri, "docs/" + src_uri)
    return posixpath.normpath(posixpath.join(posixpath.dirname(source), target))


def _site_path(repo: str) -> str | None:
    if repo.startswith("docs/"):
        return repo[len("docs/"):]
    if repo in ROOT_PAGES:
        return ROOT_PAGES[repo]
    return repo if repo.startswith("results/") else None


def _links(src_uri: str, markdown: str):
    for match in LINK.finditer(markdown):
        target = match.group(1)
        if "://" not in target and not target.startswith(("/", "mailto:")):
            yield match, _repo_path(src_uri, target)


def on_files(files, config):
    for name in ("GALLERY.md", "REPRODUCTION.md"):
        _outside[ROOT_PAGES[name]] = name
        files.append(File.generated(config, ROOT_PAGES[name], abs_src_path=str(ROOT / name)))
    wanted = set()
    for page in files.documentation_pages():
        for _, repo in _links(page.src_uri, Path(page.abs_src_path).read_text(encoding="utf-8")):
            if repo.startswith("results/") and (ROOT / repo).is_file():
                wanted.add(repo)
    for repo in sorted(wanted):
        _outside[repo] = repo
        files.append(File.generated(config, repo, abs_src_path=str(ROOT / repo)))
    return files


def on_page_markdown(markdown, page, config, files):
    src = page.file.src_uri
    out, last = [], 0
    for match, repo in _links(src, markdown):
        site = _site_path(repo)
        if site is not None and files.get_file_from_path(site) is not None:
            out += [markdown[last:match.start(1)], posixpath.relpath(site, posixpath.dirname(src) or ".")]
            last = match.end(1)
    return "".join(out) + markdown[last:]
