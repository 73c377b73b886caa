#!/usr/bin/env python3
"""At-most-one-copy oracle of the fleet tests.

Rebuilds, per VM, where it ran and when from the daemons' logs (their
workers log to the same file), and its ownership key's history from
etcd, then asserts:

  * the running intervals on different hosts never overlap: a host starts
    running the VM only when no other host runs it;
  * the key's generation starts at 1 and grows by exactly one at each
    write (an owner change, or the source keeping the VM);
  * a host that starts a migrated-in VM owns it at some generation of
    the key, and whoever runs the VM at the end is the key's last owner.

Log lines (text format, key=value, "ts=<RFC 3339 with ms>" first):
  running: event=vm_created, event=vm_resumed, op=vm_running (the
           migration engine, logged just before the VM may run);
  stopped: op=vm_stopped (logged once it is paused), event=vm_paused,
           event=vm_destroyed, event=vm_removed, event=vm_crashed,
           event=fleet_vm_moved (dropped: another host owns it).
Timestamps are milliseconds: at equal times a stop sorts before a start,
so an overlap shorter than 1 ms is not seen.

History: `etcdctl watch --prefix PREFIX --rev 1 -w json`, one watch
response per line.

usage: fleet_timeline.py --history FILE --prefix /migrated/vms/
                         HOST=LOG... -- VM...
Prints one line per VM; exit 1 on any violation, 2 on bad input.
"""
import base64
import json
import re
import sys

LINE = re.compile(r'^ts=(\S+) level=\S+ comp=\S+ (.*)$')
FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')
RUN = {('event', 'vm_created'), ('event', 'vm_resumed'), ('op', 'vm_running')}
STOP = {('op', 'vm_stopped'), ('event', 'vm_paused'),
        ('event', 'vm_destroyed'), ('event', 'vm_removed'),
        ('event', 'vm_crashed'), ('event', 'fleet_vm_moved')}


def log_events(host, path, vms):
    """(ts, 0 stop / 1 run, host, what) per VM of @vms, from one log."""
    out = {v: [] for v in vms}
    with open(path, errors='replace') as f:
        for line in f:
            m = LINE.match(line.rstrip('\n'))
            if not m:
                continue
            kv = dict(FIELD.findall(m.group(2)))
            vm = kv.get('vm')
            if vm not in out:
                continue
            for k in ('event', 'op'):
                what = (k, kv.get(k))
                if what in RUN or what in STOP:
                    desc = what[1] + ('/' + kv['why'] if 'why' in kv else '')
                    out[vm].append((m.group(1), 1 if what in RUN else 0,
                                    host, desc))
    return out


def history(path, prefix, vms):
    """Per VM, the key's writes in order: (revision, owner, generation),
    owner None for a delete."""
    out = {v: [] for v in vms}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith('{'):
                continue
            resp = json.loads(line)
            for ev in resp.get('Events') or resp.get('events') or []:
                kv = ev.get('kv', {})
                key = base64.b64decode(kv.get('key', '')).decode()
                if not key.startswith(prefix):
                    continue
                vm = key[len(prefix):]
                if vm not in out:
                    continue
                rev = int(kv.get('mod_revision', 0))
                if ev.get('type') in (1, 'DELETE'):
                    out[vm].append((rev, None, 0))
                    continue
                val = json.loads(base64.b64decode(kv['value']))
                out[vm].append((rev, val['owner'], int(val['generation'])))
    for v in out:
        out[v].sort()
    return out


def check_generations(vm, writes):
    errs, prev = [], 0
    for rev, owner, gen in writes:
        if owner is None:
            prev = 0
            continue
        if gen != prev + 1:
            errs.append(f'{vm}: generation {gen} (owner {owner}, revision '
                        f'{rev}) after {prev}: not one more')
        prev = gen
    return errs


def check_timeline(vm, events, writes):
    errs, running = [], set()
    owners = {o for _, o, _ in writes if o}
    for ts, run, host, what in sorted(events):
        if run:
            others = running - {host}
            if others:
                errs.append(f'{vm}: starts on {host} ({what}) at {ts} '
                            f'while running on {",".join(sorted(others))}')
            if what.startswith('vm_running/migrated_in') and \
                    host not in owners:
                errs.append(f'{vm}: migrated in on {host}, which never '
                            f'owned its key')
            running.add(host)
        else:
            running.discard(host)
    last = next((o for _, o, _ in reversed(writes)), None)
    if running and running != {last}:
        errs.append(f'{vm}: runs at the end on {",".join(sorted(running))}'
                    f' but its key names {last}')
    return errs, running


def main(argv):
    hist, prefix, logs, vms = None, None, {}, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == '--history':
            hist = argv[i + 1]
            i += 2
        elif a == '--prefix':
            prefix = argv[i + 1]
            i += 2
        elif a == '--':
            vms = argv[i + 1:]
            break
        elif '=' in a:
            h, p = a.split('=', 1)
            logs[h] = p
            i += 1
        else:
            print(f'bad argument {a}', file=sys.stderr)
            return 2
    if not hist or not prefix or not logs or not vms:
        print(__doc__, file=sys.stderr)
        return 2
    events = {v: [] for v in vms}
    for h, p in logs.items():
        for v, evs in log_events(h, p, vms).items():
            events[v] += evs
    writes = history(hist, prefix, vms)
    bad = False
    for v in vms:
        errs = check_generations(v, writes[v])
        e2, running = check_timeline(v, events[v], writes[v])
        errs += e2
        if not writes[v]:
            errs.append(f'{v}: no write of its key in the history')
        if not any(r for _, r, _, _ in events[v]):
            errs.append(f'{v}: never seen running in the logs')
        keys = ' '.join(f'{o or "deleted"}/{g}' for _, o, g in writes[v])
        runs = ' '.join(f'{"+" if r else "-"}{h}' for _, r, h, _ in
                        sorted(events[v]))
        print(f'{v}: key {keys}; ran {runs}; at the end on '
              f'{",".join(sorted(running)) or "none"}')
        for e in errs:
            print(f'  VIOLATION {e}')
        bad = bad or bool(errs)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
