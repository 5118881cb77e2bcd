// CPU time by process from /proc (Linux), for benchmarks that tell where a line's CPU goes.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** CPU time (ms) used so far by each process group, and the machine's busy, idle and stolen time (ms, all cores). */
export interface CpuSnapshot {
  readonly groups: ReadonlyMap<string, ReadonlyMap<number, number>>;
  readonly machine: { busy: number; idle: number; steal: number };
}

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** The groups in the order they are printed. */
const CPU_GROUPS = ['consumers', 'Postgres', 'broker', 'api', 'this script'] as const;

/**
 * The processes given by role, and by name every process of the Postgres server and of the Kafka
 * broker (the whole server and broker, whoever they work for).
 */
export function cpuSnapshot(roles: ReadonlyMap<string, number>): CpuSnapshot {
  const groups = new Map<string, Map<number, number>>();
  const rolesByPid = new Map([...roles].map(([role, pid]) => [pid, role]));
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const role = rolesByPid.get(pid) ?? (comm === 'postgres' ? 'Postgres'
        : comm === 'java' && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('kafka.Kafka') ? 'broker' : undefined);
      if (role === undefined) continue;
      // utime and stime (fields 14 and 15): every thread of the process.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      groups.set(role, (groups.get(role) ?? new Map()).set(pid, (Number(fields[11]) + Number(fields[12])) * TICK_MS));
    } catch {
      // The process ended meanwhile.
    }
  }
  const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number) as number[];
  return { groups, machine: { busy: (user! + nice! + system! + irq! + softirq!) * TICK_MS, idle: (idle! + iowait!) * TICK_MS, steal: steal! * TICK_MS } };
}

/** CPU per unit (µs) between two snapshots, by group. A process that ended in between is not counted. */
export function cpuPerUnit(before: CpuSnapshot, after: CpuSnapshot, units: number): Map<string, number> {
  const used = new Map<string, number>();
  for (const group of CPU_GROUPS) {
    const pids = after.groups.get(group);
    if (!pids) continue;
    let ms = 0;
    for (const [pid, total] of pids) ms += total - (before.groups.get(group)?.get(pid) ?? 0);
    used.set(group, (ms * 1000) / units);
  }
  return used;
}

/** The machine's busy and stolen shares of all its cores' time between two snapshots. */
export function machineShares(before: CpuSnapshot, after: CpuSnapshot): { busy: number; steal: number } {
  const span = (key: 'busy' | 'idle' | 'steal') => after.machine[key] - before.machine[key];
  const all = span('busy') + span('idle') + span('steal');
  return { busy: span('busy') / all, steal: span('steal') / all };
}

/** `consumers 74, Postgres 69, …: 159 µs (machine busy 80 %, stolen 0 %)`. */
export function cpuPerLine(before: CpuSnapshot, after: CpuSnapshot, lines: number): string {
  const used = cpuPerUnit(before, after, lines);
  const { busy, steal } = machineShares(before, after);
  const total = [...used.values()].reduce((a, b) => a + b, 0);
  return `${[...used].map(([group, us]) => `${group} ${Math.round(us)}`).join(', ')}: ${Math.round(total)} µs `
    + `(machine busy ${Math.round(100 * busy)} %, stolen ${Math.round(100 * steal)} %)`;
}

/** What a line may cost all processes together for `linesPerSecond` on this machine's cores (µs). */
export const budgetPerLine = (linesPerSecond: number) => (availableParallelism() * 1e6) / linesPerSecond;
