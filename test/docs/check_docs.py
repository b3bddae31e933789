#!/usr/bin/env python3
"""Keeps the manual (README.md and docs/*.md) true to the tree.

  (a) every relative link and image resolves: the file (or folder) exists,
      and an #anchor into a Markdown file names one of its headings (as
      GitHub makes them: lowercase, punctuation dropped, spaces to hyphens,
      -1, -2, ... for repeats);
  (b) every CHORUS_* name the manual mentions exists: a setting, a name
      that include/chorus.h or the Fortran module defines, or a variable a
      program of perf/ or a script of tools/ reads (NAME_* stands for the
      names it begins);
      every setting (the one table in lib/core/config.cc, and any CHORUS_*
      variable read elsewhere in lib/ through chorus_setting or getenv) has
      its row in docs/configuration.md, no row names anything else, and the
      row's "Same on every rank" says what the table's protocol flag says;
  (c) the folder map of docs/architecture.md names every folder of lib/
      (lib/X/ at the start of a line, a subfolder Y/ indented under it),
      and every folder it names exists.

The lists come from the sources, never from here.
Usage: check_docs.py [SOURCE_ROOT]   (default: two folders above this file)
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
problems = []


def problem(path, line, message):
    problems.append(f'{os.path.relpath(path, ROOT)}:{line}: {message}')


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def manual_files():
    files = [os.path.join(ROOT, 'README.md')]
    docs = os.path.join(ROOT, 'docs')
    files += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith('.md'))
    return files


FENCE = re.compile(r'^\s*(```|~~~)')


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fenced = None
    for n, line in enumerate(text.split('\n'), start=1):
        m = FENCE.match(line)
        if m:
            if fenced is None:
                fenced = m.group(1)
            elif m.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            yield n, line


# --- (a) links, images and anchors ---------------------------------------

def slug(heading):
    text = re.sub(r'!\[([^\]]*)\]\([^)]*\)', r'\1', heading)  # images: their alt text
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)  # links: their text
    text = text.replace('`', '').replace('*', '')
    text = re.sub(r'<[^>]+>', '', text)
    text = text.strip().lower()
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


anchor_cache = {}


def anchors(path):
    if path not in anchor_cache:
        seen = {}
        found = set()
        previous = ''
        for _, line in prose_lines(read(path)):
            heading = None
            m = re.match(r'^ {0,3}#{1,6}\s+(.*?)(\s+#+)?\s*$', line)
            if m:
                heading = m.group(1)
            elif re.match(r'^ {0,3}(=+|-+)\s*$', line) and previous.strip() and not previous.lstrip().startswith(('|', '-', '*', '>')):
                heading = previous.strip()
            if heading is not None:
                s = slug(heading)
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f'{s}-{n}')
            previous = line
        anchor_cache[path] = found
    return anchor_cache[path]


LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)')
REFERENCE = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$')
HTML = re.compile(r'<(?:img|a)\b[^>]*?\b(?:src|href)\s*=\s*"([^"]*)"', re.I)
SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:|^//')


def check_target(path, line, target):
    if not target or SCHEME.match(target):
        return
    file_part, _, anchor = target.partition('#')
    dest = path if not file_part else os.path.normpath(os.path.join(os.path.dirname(path), file_part))
    if not os.path.exists(dest):
        problem(path, line, f'link to a file that does not exist: {target}')
        return
    if not anchor:
        return
    if dest.endswith('.md') and os.path.isfile(dest):
        if anchor not in anchors(dest):
            problem(path, line, f'no heading makes the anchor #{anchor} in {os.path.relpath(dest, ROOT)}')
    elif not re.fullmatch(r'L\d+(-L\d+)?', anchor):
        problem(path, line, f'anchor #{anchor} into a file that is not Markdown: {target}')


def check_links(path):
    for n, line in prose_lines(read(path)):
        code_free = re.sub(r'`[^`]*`', lambda m: 'x' * len(m.group(0)), line)
        # Inline code inside a link's text is masked too; the target stays.
        for m in LINK.finditer(code_free):
            check_target(path, n, line[m.start(1):m.end(1)])
        m = REFERENCE.match(code_free)
        if m:
            check_target(path, n, line[m.start(1):m.end(1)])
        for m in HTML.finditer(code_free):
            check_target(path, n, line[m.start(1):m.end(1)])


# --- (b) CHORUS_* names ----------------------------------------------------

def source_files(folder, suffixes):
    for top, dirs, names in os.walk(os.path.join(ROOT, folder)):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(suffixes):
                yield os.path.join(top, name)


READ_CALL = re.compile(r'\b(?:chorus_setting|getenv|secure_getenv)\s*\(\s*"(CHORUS_[A-Z0-9_]+)"')


def settings_from_source():
    """{name: protocol flag, or None when read outside the table}."""
    config = os.path.join(ROOT, 'lib', 'core', 'config.cc')
    table = {name: flag == 'true' for name, flag in re.findall(r'\{\s*"(CHORUS_[A-Z0-9_]+)"\s*,\s*(true|false)\b', read(config))}
    if not table:
        problem(config, 1, 'found no row of the settings table ({"CHORUS_...", true|false, ...}): update check_docs.py')
    settings = dict(table)
    for path in source_files('lib', ('.c', '.cc', '.cpp', '.h', '.cu')):
        for name in READ_CALL.findall(read(path)):
            settings.setdefault(name, None)
    return settings


def other_names():
    """CHORUS_* names that are not settings but exist: the C API's, the
    Fortran module's, the variables perf/'s programs read, and those the
    scripts of tools/ read."""
    names = set()
    header = read(os.path.join(ROOT, 'include', 'chorus.h'))
    names |= set(re.findall(r'#\s*define\s+(CHORUS_[A-Z0-9_]+)', header))
    names |= set(re.findall(r'\b(CHORUS_[A-Z0-9_]+)\s*=', header))
    for path in source_files(os.path.join('lib', 'fortran'), ('.f90', '.F90')):
        names |= set(re.findall(r'parameter\b[^:\n]*::\s*(CHORUS_[A-Z0-9_]+)', read(path), re.I))
    for path in source_files('perf', ('.c', '.cc', '.h')):
        names |= set(READ_CALL.findall(read(path)))
    # The scripts' own variables (tools/*.sh): ${CHORUS_X...} read there.
    for path in source_files('tools', ('.sh',)):
        names |= set(re.findall(r'\$\{?(CHORUS_[A-Z0-9_]+)', read(path)))
    return names


MENTION = re.compile(r'\bCHORUS_[A-Z0-9_]*\*?')


def check_names(path, known):
    for n, line in enumerate(read(path).split('\n'), start=1):
        for m in MENTION.finditer(line):
            name = m.group(0)
            if name.endswith('*') or name.endswith('_'):
                prefix = name.rstrip('*')
                if not any(k.startswith(prefix) for k in known):
                    problem(path, n, f'{name}: no setting or API name begins with {prefix}')
            elif name not in known:
                problem(path, n, f'{name} is neither a setting nor a name of chorus.h, the Fortran module, perf/ or tools/')


def check_configuration_page(settings):
    path = os.path.join(ROOT, 'docs', 'configuration.md')
    column = None
    rows = {}
    for n, line in prose_lines(read(path)):
        if not line.startswith('|'):
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if 'Variable' in cells and 'Same on every rank' in cells:
            column = cells.index('Same on every rank')
            continue
        m = re.fullmatch(r'`(CHORUS_[A-Z0-9_]+)`', cells[0])
        if m and column is not None:
            rows[m.group(1)] = (n, cells[column] if column < len(cells) else '')
    if column is None:
        problem(path, 1, 'no settings table with the columns "Variable" and "Same on every rank"')
        return
    for name, protocol in sorted(settings.items()):
        if name not in rows:
            problem(path, 1, f'{name} is a setting (lib/) but has no row in the settings table')
        elif protocol is not None and rows[name][1] != ('yes' if protocol else 'no'):
            problem(path, rows[name][0], f'{name}: "Same on every rank" should be '
                    f'{"yes" if protocol else "no"}: lib/core/config.cc marks it '
                    f'{"as" if protocol else "as not"} changing the protocol')
    for name, (n, _) in sorted(rows.items()):
        if name not in settings:
            problem(path, n, f'{name} has a row in the settings table but is no setting of lib/')


def check_folder_map():
    path = os.path.join(ROOT, 'docs', 'architecture.md')
    lib = os.path.join(ROOT, 'lib')
    on_disk = set()
    for dirpath, dirnames, _ in os.walk(lib):
        dirnames[:] = [d for d in dirnames if not d.startswith(('.', '__'))]
        for d in dirnames:
            on_disk.add(os.path.relpath(os.path.join(dirpath, d), lib))
    named = {}
    parent = None
    for n, line in enumerate(read(path).splitlines(), 1):
        top = re.match(r'lib/([\w/]+?)/\s', line)
        if top:
            parent = top.group(1)
            named[parent] = n
            continue
        sub = re.match(r'  (\w+)/\s', line)
        if sub and parent:
            named[f'{parent}/{sub.group(1)}'] = n
        elif not line.startswith(' '):
            parent = None
    for d in sorted(on_disk - set(named)):
        problem(path, 1, f'lib/{d}/ is a folder of lib/ that the folder map does not name')
    for d in sorted(set(named) - on_disk):
        problem(path, named[d], f'the folder map names lib/{d}/, which does not exist')
    return len(on_disk)


def main():
    files = manual_files()
    for path in files:
        check_links(path)
    settings = settings_from_source()
    known = set(settings) | other_names()
    for path in files:
        check_names(path, known)
    check_configuration_page(settings)
    folders = check_folder_map()
    if problems:
        print('\n'.join(problems))
        print(f'{len(problems)} problem(s) in the manual (README.md, docs/*.md)')
        return 1
    print(f'{len(files)} pages checked: links, anchors and images resolve; '
          f'{len(settings)} settings, each documented in docs/configuration.md; '
          f'the {folders} folders of lib/ in the architecture page\'s map')
    return 0


if __name__ == '__main__':
    sys.exit(main())
