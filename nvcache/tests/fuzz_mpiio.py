#!/usr/bin/env python3
"""fuzz_mpiio.py: differential fuzzing of nvcache against plain MPI-IO.

For each seed the random MPI-IO program of fuzz_mpiio.c runs twice under mpiexec, both times
through LD_PRELOAD=libnvcache.so: plain (NVCACHE_ENABLE=0: every call forwarded to MPI-IO) and
through nvcache under one of the configurations below. The seed fails if either run fails or
times out, if any rank's log differs (return classes, counts, hashes of the bytes read,
positions, sizes), if the files differ byte for byte, if either run disagrees with the program's
own model of the files (a read or a final file unlike the oracle), or if anything is left in
NVCACHE_DIR after a run. Each difference is one line naming the seed, the number of ranks, the
configuration and what differs, and each failing seed one line with the command that reruns it
alone; its work directories are kept under WORKDIR. Exit status 0: all seeds agree; 1: some
differ; 2: bad usage.

usage: fuzz_mpiio.py [--seeds A-B] [--np 2,3,4] [--configs NAME,...] [--steps N] [--timeout S]
                     [--max-failures N] [--mix all|cached] [--keep FILE] [--shrink [--shrink-on TEXT]]
                     MPIEXEC FUZZ_MPIIO LIBNVCACHE WORKDIR

  MPIEXEC       mpiexec.mpich or mpiexec.openmpi, or tests/emu_mpiexec.sh to run across emulated
                hosts (it reads NVCACHE_EMU_MPIEXEC and NVCACHE_EMU_HOSTS; this script gives each
                run its own NVCACHE_EMU_ROOT and checks every host's NVCACHE_DIR)
  FUZZ_MPIIO    the fuzz_mpiio program built for that MPI; LIBNVCACHE: libnvcache.so of that build
  WORKDIR       where the runs write (WORKDIR/plain, WORKDIR/nvcache; failing seeds' runs are
                moved to WORKDIR/seed-S-npN-CONFIG)
  --seeds       a seed or a range A-B (inclusive, default 0-8); with C configurations, seed s runs
                configuration s % C with rank count number (s // C + s % C) % len(NP): the C
                seeds from a multiple of C run every configuration, with rank counts mixed, and
                C x len(NP) seeds from there every pair
  --np          rank counts (at most 4; default 2,3,4); --configs: names from CONFIGS (default: all)
  --steps       steps of each program (default 60); --timeout: seconds for one run (default 60)
  --mix cached  only calls nvcache serves from its cache (no shared file pointer, split
                collectives, atomic mode or SELF handles beside the WORLD one, which pass a file
                through to MPI-IO); default all
  --keep FILE   run only the steps FILE lists (see --shrink)
  --shrink      (one seed, one np, one configuration) delta-debugging of the steps: finds a small
                set of steps that still fails (with --shrink-on TEXT: still fails with a line
                containing TEXT), writes it to WORKDIR/keep-S-npN-CONFIG and prints the command
                that runs just those; FUZZ_MPIIO_TRACE=1 in the environment makes the program log
                each access before it is issued
  --max-failures  stop after this many failing seeds (default 3)
NVCACHE_DIR comes from the environment (default /dev/shm/nvcache-fuzz-UID); other NVCACHE_*
settings in the environment reach both runs, except those a configuration sets. A sweep also
fails if nvcache served no call at all (NVCACHE_STATS of the nvcache runs).

Examples, in nvcache/:
  tests/fuzz_mpiio.py --seeds 0-299 mpiexec.mpich build/tests/fuzz_mpiio build/libnvcache.so /tmp/fz
  NVCACHE_EMU_MPIEXEC=mpiexec.openmpi tests/fuzz_mpiio.py --seeds 0-99 tests/emu_mpiexec.sh \
      build-openmpi/tests/fuzz_mpiio build-openmpi/libnvcache.so /tmp/fz
  tests/fuzz_mpiio.py --shrink --seeds 7 --np 3 --configs async mpiexec.mpich \
      build/tests/fuzz_mpiio build/libnvcache.so /tmp/fz

Open MPI runs use OMPIO's fcoll "individual" (OMPI_MCA_fcoll=individual): Open MPI 4.1.4's
default collective I/O returns wrong bytes to collective reads whose ranges overlap and writes
stale buffer bytes into the gaps of collective writes past the end of the file, in the plain run.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# name: the NVCACHE_* settings of the nvcache run (settings not named keep nvcache's defaults)
CONFIGS = {
    'rpn0': {'NVCACHE_RANKS_PER_NODE': '0'},  # one node per host, 1 MiB stripes
    'rpn1': {'NVCACHE_RANKS_PER_NODE': '1'},  # a node per rank: everything crosses nodes
    'rpn1-4k': {'NVCACHE_RANKS_PER_NODE': '1', 'NVCACHE_STRIPE': '4K'},
    'rpn0-4k': {'NVCACHE_RANKS_PER_NODE': '0', 'NVCACHE_STRIPE': '4K'},
    'async': {'NVCACHE_RANKS_PER_NODE': '1', 'NVCACHE_REPLY': 'async', 'NVCACHE_STRIPE': '4K'},
    'async-flushsync': {'NVCACHE_RANKS_PER_NODE': '1', 'NVCACHE_REPLY': 'async', 'NVCACHE_FLUSH': 'sync',
                        'NVCACHE_STRIPE': '4K'},
    'flushsync': {'NVCACHE_RANKS_PER_NODE': '0', 'NVCACHE_FLUSH': 'sync', 'NVCACHE_STRIPE': '4K'},
    'rpn2-4k': {'NVCACHE_RANKS_PER_NODE': '2', 'NVCACHE_STRIPE': '4K'},  # direct access beside managers
    'nodirect': {'NVCACHE_RANKS_PER_NODE': '2', 'NVCACHE_DIRECT': '0', 'NVCACHE_STRIPE': '4K'},
}
CONFIG_VARS = sorted({k for c in CONFIGS.values() for k in c})
MAILBOX = re.compile(r'^nvcache-[0-9a-f]{16}-n[0-9]+$')
HITS = re.compile(r'^nvcache-stats rank=\d+ file=\S+ hits=(\d+) passthrough=(\d+)', re.M)


def fail(msg):
    print(f'fuzz_mpiio.py: {msg}', file=sys.stderr)
    sys.exit(2)


class Launcher:
    """How to start a job: the MPI (for its quirks) and, across emulated hosts, where each host's
    /dev/shm lies."""

    def __init__(self, mpiexec):
        self.mpiexec = mpiexec
        self.emulated = os.path.basename(mpiexec).startswith('emu_mpiexec')
        real = os.environ.get('NVCACHE_EMU_MPIEXEC', '') if self.emulated else mpiexec
        if not real:
            fail(f'{mpiexec} needs NVCACHE_EMU_MPIEXEC (the real mpiexec) in the environment')
        found = shutil.which(real)
        if not found:
            fail(f'{real}: not found')
        target = os.path.basename(os.path.realpath(found))
        self.open_mpi = 'openmpi' in os.path.basename(found) or target in ('orterun', 'prterun')
        self.mpi = 'openmpi' if self.open_mpi else 'mpich'
        self.hosts = int(os.environ.get('NVCACHE_EMU_HOSTS', '2')) if self.emulated else 1

    def command(self, np_, rank_env, program):
        """The command line and the launcher's environment for a job of np_ ranks, each running
        program with rank_env added to its environment."""
        env = {k: v for k, v in os.environ.items() if k not in CONFIG_VARS and k != 'LD_PRELOAD'}
        cmd = [self.mpiexec, '-n', str(np_)]
        if self.open_mpi:
            env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
                       OMPI_MCA_rmaps_base_oversubscribe='1')
            if not self.emulated:
                cmd.append('--oversubscribe')
            rank_env = dict(rank_env, OMPI_MCA_fcoll='individual')
        # the ranks' settings on their own command line: every launcher passes them on, to
        # every host
        cmd += ['env'] + [f'{k}={v}' for k, v in sorted(rank_env.items())] + program
        return cmd, env


def nvcache_dirs(launcher, nvdir, emu_root):
    """Where NVCACHE_DIR is for each host of a run ((host, path) pairs)."""
    if launcher.emulated and nvdir.startswith('/dev/shm/'):
        rel = os.path.relpath(nvdir, '/dev/shm')
        return [(f'h{h}', os.path.join(emu_root, f'h{h}', rel)) for h in range(launcher.hosts)]
    return [('', nvdir)]


def leftovers(launcher, nvdir, emu_root):
    """What a job left behind: files in NVCACHE_DIR (on each host) and, across emulated hosts,
    nvcache mailboxes in a host's /dev/shm. Removes the files it reports."""
    left = []
    for host, d in nvcache_dirs(launcher, nvdir, emu_root):
        if os.path.isdir(d):
            names = sorted(os.listdir(d))
            if names:
                left.append(f'{"host " + host + " " if host else ""}NVCACHE_DIR holds {" ".join(names)}')
            for n in names:
                p = os.path.join(d, n)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                else:
                    os.unlink(p)
    if emu_root:
        for h in range(launcher.hosts):
            hd = os.path.join(emu_root, f'h{h}')
            boxes = sorted(n for n in os.listdir(hd) if MAILBOX.match(n)) if os.path.isdir(hd) else []
            if boxes:
                left.append(f'host h{h} /dev/shm holds mailboxes {" ".join(boxes)}')
    return left


def run_job(cmd, env, timeout):
    """Runs cmd in its own session; on timeout the whole session is killed. Returns (exit status,
    output); 124 means timed out."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                out, _ = p.communicate(timeout=5)
                break
            except subprocess.TimeoutExpired:
                out = b''
        rc = 124
    return rc, out.decode(errors='replace')


class Fuzz:
    """The runs of one invocation: the program, the library, the launcher and where they write."""

    def __init__(self, args):
        self.args = args
        self.launcher = Launcher(args.mpiexec)
        self.fuzz = os.path.abspath(args.fuzz)
        self.lib = os.path.abspath(args.libnvcache)
        self.workdir = os.path.abspath(args.workdir)
        self.nvdir = os.environ.get('NVCACHE_DIR') or f'/dev/shm/nvcache-fuzz-{os.getuid()}'
        for path, what in ((self.fuzz, 'FUZZ_MPIIO'), (self.lib, 'LIBNVCACHE')):
            if not os.path.isfile(path):
                fail(f'{what} {path}: no such file')
        self.hits = self.passthrough = 0

    def run_once(self, seed, np_, config, enable, keep):
        """One run of the program; returns (rundir, problems)."""
        rundir = os.path.join(self.workdir, 'nvcache' if enable else 'plain')
        shutil.rmtree(rundir, ignore_errors=True)
        os.makedirs(os.path.join(rundir, 'files'))
        # the caller's NVCACHE_* settings (not the launcher's nor a configuration's) and trace
        rank_env = {k: v for k, v in os.environ.items()
                    if k == 'FUZZ_MPIIO_TRACE' or (k.startswith('NVCACHE_') and
                                                   not k.startswith('NVCACHE_EMU_') and k not in CONFIG_VARS)}
        rank_env.update(LD_PRELOAD=self.lib, NVCACHE_DIR=self.nvdir, NVCACHE_ENABLE='1' if enable else '0')
        if self.args.mix == 'cached':
            rank_env['FUZZ_MPIIO_MIX'] = 'cached'
        if enable:
            rank_env.update(CONFIGS[config], NVCACHE_STATS='1')
        program = [self.fuzz, str(seed), os.path.join(rundir, 'files'), os.path.join(rundir, 'log'),
                   str(self.args.steps)] + ([os.path.abspath(keep)] if keep else [])
        cmd, env = self.launcher.command(np_, rank_env, program)
        emu_root = None
        if self.launcher.emulated:
            emu_root = tempfile.mkdtemp(prefix='nvcache-emu-fuzz-', dir='/dev/shm')
            env['NVCACHE_EMU_ROOT'] = emu_root
        rc, out = run_job(cmd, env, self.args.timeout)
        with open(os.path.join(rundir, 'output'), 'w') as f:
            f.write(out)
        side = 'nvcache' if enable else 'plain MPI-IO'
        problems = []
        if rc != 0:
            tail = ' | '.join(l for l in out.strip().splitlines()[-8:] if not l.startswith('nvcache-stats'))
            problems.append(f'the {side} run {"timed out" if rc == 124 else f"exited with {rc}"}: {tail}')
        problems += [f'after the {side} run {x}' for x in leftovers(self.launcher, self.nvdir, emu_root)]
        if emu_root:
            shutil.rmtree(emu_root, ignore_errors=True)
        if enable:
            for h, p in HITS.findall(out):
                self.hits += int(h)
                self.passthrough += int(p)
        return rundir, problems

    def run_seed(self, seed, np_, config, keep=None):
        """Both runs of one seed; returns the list of differences."""
        plain, problems = self.run_once(seed, np_, config, False, keep)
        cached, more = self.run_once(seed, np_, config, True, keep)
        problems += more
        problems += compare_logs(plain, cached, np_)
        problems += compare_files(plain, cached)
        plain_wrong = check_oracle(plain, 'plain MPI-IO', plain, np_, 'a bug of MPI-IO or of the fuzzer')
        problems += plain_wrong
        problems += check_oracle(cached, 'nvcache', plain, np_,
                                 'like plain MPI-IO' if plain_wrong else 'a bug of nvcache')
        return problems

    def reproduce(self, seed, np_, config, keep=None):
        """The command line that runs just this seed again."""
        env = [f'NVCACHE_DIR={self.nvdir}']
        if self.launcher.emulated:
            env += [f'NVCACHE_EMU_MPIEXEC={os.environ["NVCACHE_EMU_MPIEXEC"]}',
                    f'NVCACHE_EMU_HOSTS={self.launcher.hosts}']
        cmd = [os.path.abspath(__file__), '--seeds', str(seed), '--np', str(np_), '--configs', config,
               '--steps', str(self.args.steps), '--mix', self.args.mix] + \
            (['--keep', os.path.abspath(keep)] if keep else [])
        mpiexec = os.path.abspath(self.args.mpiexec) if os.sep in self.args.mpiexec else self.args.mpiexec
        cmd += [mpiexec, self.fuzz, self.lib, self.workdir]
        return shlex.join(env + cmd)

    def keep_failing(self, seed, np_, config):
        """Moves a failing seed's runs aside (the next seed's would replace them); returns where."""
        dest = os.path.join(self.workdir, f'seed-{seed}-np{np_}-{config}')
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        for side in ('plain', 'nvcache'):
            os.rename(os.path.join(self.workdir, side), os.path.join(dest, side))
        return dest

    def cleanup(self):
        """After a sweep without failures: the runs and the then empty directories removed."""
        for side in ('plain', 'nvcache'):
            shutil.rmtree(os.path.join(self.workdir, side), ignore_errors=True)
        for d in (self.workdir, self.nvdir):
            try:
                os.rmdir(d)
            except OSError:
                pass


def read_lines(path):
    try:
        with open(path, errors='replace') as f:
            return f.read().splitlines()
    except OSError:
        return None


def compare_logs(plain, cached, np_):
    """The first line where each rank's logs differ."""
    out = []
    for r in range(np_):
        a = read_lines(os.path.join(plain, f'log.{r}')) or ['<no log>']
        b = read_lines(os.path.join(cached, f'log.{r}')) or ['<no log>']
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else '<end of log>'
            y = b[i] if i < len(b) else '<end of log>'
            if x != y:
                out.append(f'rank {r} log line {i + 1} differs: plain "{x}" nvcache "{y}"')
                break
    return out


def first_difference(a, b):
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def compare_files(plain, cached):
    out = []
    pa, pb = os.path.join(plain, 'files'), os.path.join(cached, 'files')
    # not ROMIO's hidden shared file pointer files (named by a random number; left by a killed run)
    fa = sorted(n for n in os.listdir(pa) if not n.startswith('.'))
    fb = sorted(n for n in os.listdir(pb) if not n.startswith('.'))
    if fa != fb:
        out.append(f'files left differ: plain {" ".join(fa) or "none"}, nvcache {" ".join(fb) or "none"}')
    for name in sorted(set(fa) & set(fb)):
        with open(os.path.join(pa, name), 'rb') as f:
            x = f.read()
        with open(os.path.join(pb, name), 'rb') as f:
            y = f.read()
        if x != y:
            out.append(f'file {name} differs: plain {len(x)} bytes, nvcache {len(y)} bytes, '
                       f'first difference at byte {first_difference(x, y)}')
    return out


def check_oracle(rundir, side, plain, np_, blame):
    """Where a run disagrees with the program's model: reads it flagged, and final files unlike
    the expected contents (written by the plain run's rank 0)."""
    out = []
    for r in range(np_):
        for line in read_lines(os.path.join(rundir, f'log.{r}')) or []:
            if 'ORACLE-MISMATCH' in line:
                out.append(f'{side} rank {r} read other bytes than the model ({blame}): "{line}"')
                break
    for name in ('f0', 'f1'):
        expect, got = os.path.join(plain, f'log.expect.{name}'), os.path.join(rundir, 'files', name)
        if os.path.isfile(expect) and os.path.isfile(got):
            with open(expect, 'rb') as f:
                x = f.read()
            with open(got, 'rb') as f:
                y = f.read()
            if x != y:
                out.append(f'{side} file {name} is not what the model expects ({blame}): expected {len(x)} '
                           f'bytes, got {len(y)}, first difference at byte {first_difference(x, y)}')
    return out


def parse_seeds(text):
    m = re.fullmatch(r'(\d+)(?:-(\d+))?', text)
    if not m:
        fail(f'--seeds {text}: expected N or A-B')
    a = int(m.group(1))
    b = int(m.group(2)) if m.group(2) else a
    if b < a:
        fail(f'--seeds {text}: empty range')
    return range(a, b + 1)


def sweep(fz, seeds, nps, configs):
    """Runs each seed; prints a line per seed and a summary. Returns the exit status."""
    a = fz.args
    failures = ran = 0
    t0 = time.time()
    for seed in seeds:
        ran += 1
        config = configs[seed % len(configs)]
        np_ = nps[(seed // len(configs) + seed % len(configs)) % len(nps)]
        t = time.time()
        problems = fz.run_seed(seed, np_, config, a.keep)
        tag = f'seed {seed} np {np_} config {config}'
        if not problems:
            print(f'{tag}: same ({time.time() - t:.1f} s)', flush=True)
            continue
        failures += 1
        for p in problems:
            print(f'FAIL {tag}: {p}', flush=True)
        print(f'FAIL {tag}: runs kept in {fz.keep_failing(seed, np_, config)}; rerun: '
              f'{fz.reproduce(seed, np_, config, a.keep)}', flush=True)
        if failures >= a.max_failures:
            print(f'stopped after {failures} failing seeds', flush=True)
            break
    calls = fz.hits + fz.passthrough
    ratio = f', {fz.hits} of {calls} calls served by nvcache' if calls else ''
    print(f'{ran} seeds, {a.steps} steps, on {fz.launcher.mpi}'
          f'{f" across {fz.launcher.hosts} emulated hosts" if fz.launcher.emulated else ""}: '
          f'{failures} failing{ratio} ({time.time() - t0:.0f} s)', flush=True)
    if not failures and fz.hits == 0 and not a.keep:
        print('FAIL: nvcache served no call in any seed (is LIBNVCACHE nvcache, and NVCACHE_DIR writable?)')
        failures = 1
    if not failures:
        fz.cleanup()
    return 1 if failures else 0


def shrink(fz, seed, np_, config):
    """Delta debugging over the kept steps: removes chunks of steps while the seed still fails."""
    a = fz.args
    keepfile = os.path.join(fz.workdir, f'keep-{seed}-np{np_}-{config}')

    def failing(steps):
        with open(keepfile, 'w') as f:
            f.write(' '.join(map(str, steps)) + '\n')
        problems = fz.run_seed(seed, np_, config, keepfile)
        return [p for p in problems if not a.shrink_on or a.shrink_on in p]

    steps = list(range(a.steps))
    if a.keep:
        with open(a.keep) as f:
            steps = sorted({int(x) for x in f.read().split() if 0 <= int(x) < a.steps})
    if not failing(steps):
        print(f'seed {seed} np {np_} config {config}: does not fail'
              f'{" with a line containing " + repr(a.shrink_on) if a.shrink_on else ""}')
        return 1
    chunks = 2
    while len(steps) >= 2:
        size = max(1, len(steps) // chunks)
        for i in range(0, len(steps), size):
            candidate = steps[:i] + steps[i + size:]
            if candidate and failing(candidate):
                steps = candidate
                chunks = max(chunks - 1, 2)
                print(f'{len(steps)} steps: {" ".join(map(str, steps))}', flush=True)
                break
        else:
            if size == 1:
                break
            chunks = min(len(steps), chunks * 2)
    problems = failing(steps)
    print(f'seed {seed} np {np_} config {config}: fails with steps {" ".join(map(str, steps))} ({keepfile}):')
    for p in problems:
        print(f'  {p}')
    print(f'rerun: {fz.reproduce(seed, np_, config, keepfile)}')
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seeds', default='0-8')
    ap.add_argument('--np', default='2,3,4')
    ap.add_argument('--configs', default=','.join(CONFIGS))
    ap.add_argument('--steps', type=int, default=60)
    ap.add_argument('--mix', choices=('all', 'cached'), default='all')
    ap.add_argument('--timeout', type=float, default=60)
    ap.add_argument('--max-failures', type=int, default=3)
    ap.add_argument('--keep')
    ap.add_argument('--shrink', action='store_true')
    ap.add_argument('--shrink-on')
    ap.add_argument('mpiexec')
    ap.add_argument('fuzz')
    ap.add_argument('libnvcache')
    ap.add_argument('workdir')
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    try:
        nps = [int(x) for x in args.np.split(',')]
    except ValueError:
        fail(f'--np {args.np}: expected numbers')
    if not nps or any(not 1 <= n <= 4 for n in nps):
        fail(f'--np {args.np}: from 1 to 4 ranks')
    configs = args.configs.split(',')
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        fail(f'unknown configuration {", ".join(unknown)} (known: {", ".join(CONFIGS)})')
    if args.keep and not os.path.isfile(args.keep):
        fail(f'--keep {args.keep}: no such file')
    fz = Fuzz(args)
    os.makedirs(fz.workdir, exist_ok=True)
    if args.shrink:
        if len(seeds) != 1 or len(nps) != 1 or len(configs) != 1:
            fail('--shrink takes one seed, one --np and one --configs')
        return shrink(fz, seeds[0], nps[0], configs[0])
    return sweep(fz, seeds, nps, configs)


if __name__ == '__main__':
    sys.exit(main())
