#!/usr/bin/python3
"""Runs the bad-input corpus (cases.tsv) through the gpuplan binary and checks every answer.

A case fails on: a signal, a timeout (30 s), exit 3 or any exit code other than 0/1/2, nan/inf printed
as a number, a false reject (expected accept, got exit 1), a reject without a location (`file:line:` or
`command line:`; a special or missing file, or the file that lacks a required key, may be named
alone), a reject whose message lacks the expected words, a silent accept (expected reject, got 0 or 2),
or --json output that is not valid UTF-8 JSON. Cases listed in known_failures.txt may fail without
failing the run; one that passes is reported so that it can be removed. Standard library only.

usage: run_corpus.py --binary build/gpuplan [--cases cases.tsv] [--known known_failures.txt]
                     [--only SUBSTRING] [--jobs N] [--write-known PATH] [--verbose]
"""
import argparse
import concurrent.futures
import json
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# A hang detector, not a speed test (bench/ measures speed): with --jobs 4 on a 2-core CI machine a
# whole-catalog search of the 175B example that takes ~2 s alone can take several times that.
TIMEOUT_S = 30
MEMORY_LIMIT_BYTES = 4 << 30  # address space per case (not under sanitizers): a blow-up ends, it does not swap

# nan/inf as a printed number: a whole token, optionally signed ("nan", "-nan", "inf", "-inf"; printf and iostreams spell them so),
# never a piece of a word ("info", "inference", "InfiniBand", "ZeRO-Infinity") or of a file name ("x_inf.csv").
# A hyphenated word ("loss-nan", a diagnose symptom) is a name, not a number.
NONFINITE = re.compile(r'(?<![\w.-])[-+]?(?:nan|inf)(?![\w-])', re.IGNORECASE)
LOCATED = re.compile(r'(?m)(?:^|\s|")(?:command line|[^\s:"]+:\d+)(?::|"|\s|$)')


class Case:
    def __init__(self, line_no, name, expect, contains, command):
        self.line_no = line_no
        self.name = name
        self.expect = expect
        self.contains = [] if contains in ('', '-') else [c.lower() for c in contains.split('|')]
        self.command = command


def read_cases(path):
    cases, seen = [], set()
    with open(path, encoding='utf-8') as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip('\n')
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            parts = line.split('\t')
            if len(parts) != 4:
                sys.exit(f'{path}:{n}: expected 4 tab-separated fields (name, expect, contains, command), got {len(parts)}')
            name, expect, contains, command = parts
            if expect not in ('accept', 'reject', 'either'):
                sys.exit(f'{path}:{n}: expect: accept, reject or either, got {expect!r}')
            if name in seen:
                sys.exit(f'{path}:{n}: case {name!r} given twice')
            seen.add(name)
            cases.append(Case(n, name, expect, contains, command))
    return cases


def read_known(path):
    known = {}
    if not os.path.exists(path):
        return known
    with open(path, encoding='utf-8') as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith('#'):
                continue
            name, _, reason = line.partition(' ')
            known[name] = reason.strip()
    return known


class Scratch:
    """The special files of the placeholders, made once per run."""

    def __init__(self, root):
        self.root = root
        self.values = {
            'fifo': os.path.join(root, 'pipe'),
            'fifo_json': os.path.join(root, 'pipe.json'),
            'dir': os.path.join(root, 'empty-dir'),
            'missing': os.path.join(root, 'no-such-file.yaml'),
            'sparse': os.path.join(root, 'sparse.yaml'),
            'symlink': os.path.join(root, 'link.yaml'),
            'tmp': os.path.join(root, 'tmp'),
        }
        os.mkfifo(self.values['fifo'])
        os.mkfifo(self.values['fifo_json'])
        os.mkdir(self.values['dir'])
        os.mkdir(self.values['tmp'])
        with open(self.values['sparse'], 'wb') as f:
            f.truncate(3 << 30)
        os.symlink(os.path.join(HERE, 'files', 'job_base.yaml'), self.values['symlink'])
        # Big catalogs (loading must stay linear in rows): one corpus row repeated under fresh ids.
        for name, source, rows in (('links_300k', 'cat_link_short.csv', 300000), ('gpus_50k', 'cat_gpu_valid.csv', 50000),
                                   ('instances_20k', 'cat_inst_only.csv', 20000)):
            self.values[name] = os.path.join(root, name + '.csv')
            with open(os.path.join(HERE, 'files', source), encoding='utf-8') as f:
                header, row = f.readline(), f.readline()
            row_id, rest = row.split(',', 1)
            with open(self.values[name], 'w', encoding='utf-8') as f:
                f.write(header)
                f.writelines(f"{row_id}-{i},{rest.replace('testgpu', f'testgpu{i}', 1)}" for i in range(rows))
        self.make_generated(root)
        self.special = {self.values[k] for k in ('fifo', 'fifo_json', 'dir', 'missing', 'sparse')} | {
            '/dev/zero', '/dev/urandom', '/dev/null'}

    def make_generated(self, root):
        """Inputs too big for the repository, SQLite files and recorded trees, made once per run:
        {deep_plan} a 100k-deep PLAN.json; {deep_ledger_csv} a ledger CSV whose context is 100k deep;
        {digits_log} a training log with a 1 MB line of digits; {rows_200k} a 200k-row ledger CSV;
        {ledger_foreign} another application's SQLite file; {ledger_corrupt} a ledger with a damaged
        page; {ledger_inf} / {ledger_deep} gpuplan ledgers edited with sqlite3 (a stored inf, a 100k-deep
        context); {ledger_zero_ranks} a busbw row of 0 ranks and 0 nodes; {ledger_copy} a healthy ledger for cases that write (each names its own {tmp} file
        otherwise); {rec_escape} {rec_fifo} {rec_dotdot} recorded machines that reach outside
        themselves (a symlink, a '..' file in commands/index.tsv) or hold a FIFO; {rec_meminfo_abc} one whose
        MemTotal is not a number."""
        import shutil
        import sqlite3
        v = self.values

        def path(name):
            v[name] = os.path.join(root, name)
            return v[name]
        with open(path('deep_plan'), 'w') as f:
            f.write('{"plans": [' + '[' * 100000 + ']' * 100000 + ']}\n')
        header = 'id,machine,pool,kind,value,unit,tool,raw_sha256,raw_file,time_utc,version,context_json\n'
        with open(path('deep_ledger_csv'), 'w') as f:
            f.write(header + '1,node-a,h100,busbw_gb_per_s,100,GB/s,x,,,2026-01-05,,"' + '{""a"":' * 100000 + '1' +
                    '}' * 100000 + '"\n')
        with open(path('digits_log'), 'w') as f:
            f.write('step 1 tokens/s: ' + '9' * (1 << 20) + '\nstep 2 tokens/s: 4100\n')
        with open(path('rows_200k'), 'w') as f:
            f.write(header)
            f.writelines(f'{i},node-{i % 16},pool-a,busbw_gb_per_s,{100 + i % 50},GB/s,all_reduce_perf,,,2026-01-05,,\n'
                         for i in range(200000))
        db = sqlite3.connect(path('ledger_foreign'))
        db.execute('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)')
        db.execute("INSERT INTO notes(body) VALUES ('another application''s data')")
        db.commit()
        db.close()
        schema = (
            "CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_utc TEXT NOT NULL);"
            "CREATE TABLE pools (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, description TEXT NOT NULL DEFAULT '',"
            " created_utc TEXT NOT NULL);"
            "CREATE TABLE machines (id INTEGER PRIMARY KEY, hostname TEXT NOT NULL UNIQUE, pool_id INTEGER NOT NULL"
            " REFERENCES pools(id), facts_json TEXT NOT NULL DEFAULT '{}', first_seen_utc TEXT NOT NULL,"
            " last_seen_utc TEXT NOT NULL);"
            "CREATE TABLE measurements (id INTEGER PRIMARY KEY, machine_id INTEGER NOT NULL REFERENCES machines(id),"
            " kind TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL, tool TEXT NOT NULL, raw_sha256 TEXT NOT NULL"
            " DEFAULT '', time_utc TEXT NOT NULL, version TEXT NOT NULL, raw_file TEXT NOT NULL DEFAULT '',"
            " context_json TEXT NOT NULL DEFAULT '{}');"
            "INSERT INTO migrations VALUES (1, 'one', '2026-01-01T00:00:00Z'), (2, 'two', '2026-01-01T00:00:00Z');"
            "INSERT INTO pools VALUES (1, 'h100', '', '2026-01-01T00:00:00Z');"
            "INSERT INTO machines VALUES (1, 'node-a', 1, '{}', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');"
            "PRAGMA user_version=2; PRAGMA application_id=1196444750;")
        rows = (('ledger_inf', float('inf'), '{}'), ('ledger_deep', 100.0, '{"a":' * 100000 + '1' + '}' * 100000),
                ('ledger_copy', 411.7, '{"op":"all_reduce","ranks":16,"nodes":2,"msg_bytes":8589934592}'),
                ('ledger_zero_ranks', 100.0, '{"op":"all_reduce","ranks":0,"nodes":0,"msg_bytes":1e300}'))
        for name, value, context in rows:
            db = sqlite3.connect(path(name))
            db.executescript(schema)
            db.execute("INSERT INTO measurements(machine_id, kind, value, unit, tool, time_utc, version, context_json)"
                       " VALUES (1, 'busbw_gb_per_s', ?, 'GB/s', 'all_reduce_perf', '2026-01-05T00:00:00Z', '0.9', ?)",
                       (value, context))
            db.commit()
            db.close()
        with open(v['ledger_copy'], 'rb') as f:
            data = bytearray(f.read())
        for page in range(1, len(data) // 4096):  # every page after the header page: b-tree headers overwritten
            data[page * 4096:page * 4096 + 12] = b'\x0d\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff'
        with open(path('ledger_corrupt'), 'wb') as f:
            f.write(data)
        probe = os.path.join(os.path.dirname(HERE), 'fixtures', 'probe', 'vm-2cpu-no-gpu')
        for name in ('rec_escape', 'rec_fifo', 'rec_dotdot', 'rec_meminfo_abc'):
            shutil.copytree(probe, path(name), symlinks=True)
        meminfo = os.path.join('fs', 'proc', 'meminfo')
        os.remove(os.path.join(v['rec_escape'], meminfo))
        os.symlink('../../../../../../../../../../etc/passwd', os.path.join(v['rec_escape'], meminfo))
        os.remove(os.path.join(v['rec_fifo'], meminfo))
        os.mkfifo(os.path.join(v['rec_fifo'], meminfo))
        os.remove(os.path.join(v['rec_meminfo_abc'], meminfo))
        with open(os.path.join(v['rec_meminfo_abc'], meminfo), 'w') as f:
            f.write('MemTotal:       abc kB\nMemFree:        1024 kB\n')
        with open(os.path.join(v['rec_dotdot'], 'commands', 'index.tsv'), 'a') as f:
            f.write('nvidia-smi --query-gpu=index,name,memory.total,pcie.link.gen.current,pcie.link.width.current,'
                    'clocks.max.sm,power.limit --format=csv,noheader,nounits\t../../../../../../../../etc/passwd\t0\n')

    def expand(self, command):
        argv = shlex.split(command)
        out = []
        for a in argv:
            for k, v in self.values.items():
                a = a.replace('{' + k + '}', v)
            # \xHH (HH >= 80): that raw byte, for arguments that are not UTF-8.
            a = re.sub(r'\\x([89a-fA-F][0-9a-fA-F])', lambda m: chr(0xdc00 + int(m.group(1), 16)), a)
            out.append(a)
        return out


def sanitized(binary):
    try:
        with open(binary, 'rb') as f:
            data = f.read()
        return b'AddressSanitizer' in data or b'ThreadSanitizer' in data or b'MemorySanitizer' in data
    except OSError:
        return False


def limit_memory():
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_one(binary, case, scratch, files_dir, limit_mem):
    argv = scratch.expand(case.command)
    try:
        p = subprocess.Popen([binary] + argv, cwd=files_dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=limit_memory if limit_mem else os.setsid)
    except OSError as e:
        return argv, None, b'', str(e).encode(), False
    try:
        out, err = p.communicate(timeout=TIMEOUT_S)
        return argv, p.returncode, out, err, False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = p.communicate()
        return argv, p.returncode, out, err, True


def input_text(argv, files_dir):
    """The case's own input (flags and the files it names), where nan/inf may be echoed back."""
    parts = list(argv)
    for a in argv:
        path = os.path.join(files_dir, a)
        if os.path.isfile(path) and os.path.getsize(path) < (1 << 20):
            with open(path, 'rb') as f:
                parts.append(f.read().decode('utf-8', 'replace'))
    return '\n'.join(parts).lower()


def wants_json(argv):
    for i, a in enumerate(argv):
        if a in ('--json', '--format=json') or (a == '--format' and i + 1 < len(argv) and argv[i + 1] == 'json'):
            return True
    return False


def judge(case, argv, rc, out, err, timed_out, scratch, files_dir):
    """The failure classes of one run, as (class, detail) pairs; empty when the case passes."""
    problems = []
    text = (out + b'\n' + err).decode('utf-8', 'surrogateescape')  # raw bytes stay comparable with argv
    if timed_out:
        return [('timeout', f'no answer in {TIMEOUT_S} s')]
    if rc is None:
        return [('no-run', text.strip()[:200])]
    if rc < 0:
        return [('signal', f'killed by signal {-rc} ({signal.Signals(-rc).name})')]
    if rc == 3:
        problems.append(('exit-3', 'internal error on bad input'))
    elif rc not in (0, 1, 2):
        problems.append(('bad-exit', f'exit {rc}'))
    # nan/inf as numbers; a reject may quote the user's own "inf"/"nan" back.
    # A warning that skips a row (validate) may quote it too, whatever the exit.
    own = input_text(argv, files_dir) if rc == 1 or 'warning:' in text else ''
    hits = []
    for line in text.splitlines():
        quoting = rc == 1 or 'warning:' in line
        hits += [h for h in NONFINITE.findall(line) if not (quoting and h.lower().lstrip('+-') in own)]
    if hits:
        problems.append(('nan-inf', 'prints ' + ', '.join(sorted(set(hits)))))
    json_doc = None
    if wants_json(argv) and rc in (0, 1, 2) and '--help' not in argv:
        try:
            json_doc = json.loads(out.decode('utf-8', 'strict'))
        except (UnicodeDecodeError, ValueError) as e:
            problems.append(('bad-json', f'--json output is not valid UTF-8 JSON: {str(e)[:120]}'))
    if rc == 1:
        if case.expect == 'accept':
            problems.append(('false-reject', 'expected accept, got exit 1'))
        located = bool(LOCATED.search(text))
        if not located and isinstance(json_doc, dict) and isinstance(json_doc.get('error'), dict):
            loc = json_doc['error'].get('location')
            located = isinstance(loc, str) and loc != ''
            if located and loc != 'command line' and not re.search(r':\d+$', loc):
                # A file alone: one that cannot be read as a whole, or one that lacks a required key.
                located = (loc in scratch.special or loc.startswith(scratch.root) or
                           not os.path.isfile(os.path.join(files_dir, loc)) or
                           bool(re.search(r'missing|needs |required|no model', text, re.IGNORECASE)))
        if not located and re.search(r'missing|needs |required|no model', text, re.IGNORECASE):
            # A key that is not there has no line: the file that lacks it is the location.
            located = any((a + ':') in text for a in argv if os.path.isfile(os.path.join(files_dir, a)))
        if not located:
            # A file that cannot be read as a whole (a FIFO, a directory, missing) is its own location.
            for a in argv:
                whole_file = a in scratch.special or a.startswith(scratch.root) or (
                    not a.startswith('-') and not os.path.isfile(os.path.join(files_dir, a)) and '.' in a)
                if whole_file and (a + ':') in text:
                    located = True
        if not located:
            problems.append(('unlocated', 'a reject without file:line: or command line:'))
        if case.expect == 'reject' and case.contains and not any(c in text.lower() for c in case.contains):
            problems.append(('wrong-words', 'message lacks ' + ' | '.join(case.contains)))
    elif rc in (0, 2) and case.expect == 'reject':
        problems.append(('silent-accept', f'expected reject, got exit {rc}'))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--binary', default=os.environ.get('GPUPLAN_BINARY', ''), help='the gpuplan executable')
    ap.add_argument('--cases', default=os.path.join(HERE, 'cases.tsv'))
    ap.add_argument('--known', default=os.path.join(HERE, 'known_failures.txt'))
    ap.add_argument('--only', default='', help='run only cases whose name contains this')
    ap.add_argument('--jobs', type=int, default=4, help='cases run at once (default 4)')
    ap.add_argument('--write-known', default='', help='write the current failures as a known-failures file')
    ap.add_argument('--verbose', action='store_true', help='print each failing case\'s output')
    args = ap.parse_args()
    if not args.binary or not os.access(args.binary, os.X_OK):
        sys.exit(f'run_corpus.py: no gpuplan binary (--binary or GPUPLAN_BINARY): {args.binary!r}')
    binary = os.path.abspath(args.binary)
    files_dir = os.path.join(HERE, 'files')
    cases = [c for c in read_cases(args.cases) if args.only in c.name]
    known = read_known(args.known)
    limit_mem = not sanitized(binary)
    results = {}
    with tempfile.TemporaryDirectory(prefix='gpuplan-badinput-') as root:
        scratch = Scratch(root)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {pool.submit(run_one, binary, c, scratch, files_dir, limit_mem): c for c in cases}
            for fut in concurrent.futures.as_completed(futures):
                c = futures[fut]
                argv, rc, out, err, timed_out = fut.result()
                results[c.name] = (judge(c, argv, rc, out, err, timed_out, scratch, files_dir), rc, out, err)
    new_failures, still_known, now_passing = [], [], []
    for c in cases:
        problems, rc, out, err = results[c.name]
        if problems and c.name in known:
            still_known.append(c)
        elif problems:
            new_failures.append(c)
        elif c.name in known:
            now_passing.append(c)
    stale = sorted(n for n in known if n not in {c.name for c in read_cases(args.cases)})

    def show(c):
        problems, rc, out, err = results[c.name]
        kinds = ', '.join(f'{k}: {d}' for k, d in problems)
        print(f'  {c.name} (cases.tsv:{c.line_no}, exit {rc}): {kinds}')
        print(f'      gpuplan {c.command}')
        msg = (err or out).decode('utf-8', 'replace').strip().splitlines()
        if msg:
            print(f'      -> {msg[0][:240]}')
        if args.verbose:
            for line in (out + err).decode('utf-8', 'replace').splitlines()[:30]:
                print('         | ' + line[:240])

    if new_failures:
        print(f'FAILED ({len(new_failures)} new):')
        for c in new_failures:
            show(c)
    if now_passing:
        print(f'known failures that now pass ({len(now_passing)}; remove them from known_failures.txt):')
        for c in now_passing:
            print(f'  {c.name}')
    if stale:
        print(f'known_failures.txt names cases not in the corpus ({len(stale)}): ' + ', '.join(stale))
    if args.verbose and still_known:
        print(f'known failures still failing ({len(still_known)}):')
        for c in still_known:
            show(c)
    by_kind = {}
    for c in new_failures + still_known:
        for k, _ in results[c.name][0]:
            by_kind[k] = by_kind.get(k, 0) + 1
    kinds = ', '.join(f'{k} {n}' for k, n in sorted(by_kind.items()))
    passed = len(cases) - len(new_failures) - len(still_known)
    print(f'badinput: {len(cases)} cases, {passed} pass, {len(new_failures)} new failures, '
          f'{len(still_known)} known failures, {len(now_passing)} known failures now pass'
          + (f' [{kinds}]' if kinds else ''))
    if args.write_known:
        with open(args.write_known, 'w', encoding='utf-8') as f:
            f.write('# Cases of cases.tsv that fail today, one per line: name, then why (the defect and the file\n'
                    '# that fixes it). run_corpus.py lets these fail; remove a line when its case passes.\n')
            for c in cases:
                problems = results[c.name][0]
                if problems:
                    reason = known.get(c.name) or '; '.join(f'{k}: {d}' for k, d in problems)
                    f.write(f'{c.name} {reason}\n')
    return 1 if new_failures else 0


if __name__ == '__main__':
    sys.exit(main())
