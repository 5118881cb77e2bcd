// openapi-generator as a client team runs it: its CLI jar from Maven Central (cached in .cache/),
// the typescript-fetch, java (okhttp-gson) and python clients generated from openapi.yaml, each
// built or loaded with its own toolchain (the project's tsc, Maven, a Python 3 with pydantic 2),
// and the caller programs that use them.
import { spawn } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ensureMavenJars } from '../../scripts/maven-jars.ts';

export const OPENAPI_GENERATOR_VERSION = '7.25.0';

const ROOT = resolve(import.meta.dirname, '../..');
const CALLERS = join(ROOT, 'test/generators/openapi-generator');
const TSC = join(ROOT, 'node_modules/.bin/tsc');
// A safety net against a tool that hangs for good (Maven's first download included), not a speed assumption.
const TOOL_SAFETY_NET_MS = 20 * 60_000;

/**
 * The options docs/generating-clients.md gives. typescript-fetch and python leave out the
 * `webhooks` section (7.25 writes its operations without types: empty imports in TypeScript, a
 * syntax error in Python); java reads an absent `additionalProperties` as open, as JSON Schema
 * does, and maps an enum value it does not know to a case of its own, so an answer with fields or
 * enum values added later (the contract's versioning rule) still reads.
 */
export const GENERATORS = {
  'typescript-fetch': ['-g', 'typescript-fetch', '--global-property', 'apis,models,supportingFiles'],
  java: [
    '-g', 'java', '--library', 'okhttp-gson',
    '--additional-properties', 'disallowAdditionalPropertiesIfNotPresent=false,enumUnknownDefaultCase=true',
  ],
  python: ['-g', 'python', '--global-property', 'apis,models,supportingFiles'],
} as const;
export type GeneratorName = keyof typeof GENERATORS;

export interface Outcome {
  readonly ok: boolean;
  /** What the command printed (stdout and stderr), or why it could not run. */
  readonly output: string;
}

/** Runs a command to its end, capturing its output; never throws. */
export function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Outcome> {
  return new Promise((done) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), TOOL_SAFETY_NET_MS);
    const output = () => Buffer.concat(chunks).toString('utf8');
    child.once('error', (error) => {
      clearTimeout(timer);
      done({ ok: false, output: `${command}: ${error.message}` });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      done({ ok: code === 0, output: code === 0 ? output() : `${output()}\n${command} ${args.join(' ')} ended with ${code ?? signal}` });
    });
  });
}

/** The CLI jar, fetched by Maven once into .cache/openapi-generator/<version>/libs. */
export function generatorJar(): string {
  const mainJar = `openapi-generator-cli-${OPENAPI_GENERATOR_VERSION}.jar`;
  const libs = ensureMavenJars({
    name: 'openapi-generator',
    version: OPENAPI_GENERATOR_VERSION,
    pom: join(CALLERS, 'pom.xml'),
    properties: { 'openapi-generator.version': OPENAPI_GENERATOR_VERSION },
    mainJar,
  });
  return join(libs, mainJar);
}

export function generate(jar: string, generator: GeneratorName, outputDir: string): Promise<Outcome> {
  return run('java', ['-jar', jar, 'generate', '-i', join(ROOT, 'openapi.yaml'), '-o', outputDir, ...GENERATORS[generator]]);
}

/**
 * Compiles the generated client (in `dir/client`) and the caller program with the project's tsc
 * to CommonJS in `dir/out`: the generated imports carry no file extension, which Node resolves
 * for CommonJS only.
 */
export function compileTypeScript(dir: string): Promise<Outcome> {
  copyFileSync(join(CALLERS, 'check.ts'), join(dir, 'check.ts'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, type: 'commonjs' }));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, skipLibCheck: true,
      lib: ['es2022', 'dom'], types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')], outDir: 'out',
    },
    include: ['check.ts', 'client/**/*.ts'],
  }));
  return run(TSC, ['-p', dir]);
}

/** Compiles the generated Maven project in `dir` as it is; the classpath then runs the caller program. */
export async function compileJava(dir: string): Promise<Outcome & { classpath: string }> {
  const classpathFile = join(dir, 'classpath.txt');
  const compiled = await run('mvn', ['-B', '-q', '-Dstyle.color=never', 'compile', 'dependency:build-classpath', `-Dmdep.outputFile=${classpathFile}`], { cwd: dir });
  const classpath = compiled.ok ? `${join(dir, 'target/classes')}:${readFileSync(classpathFile, 'utf8').trim()}` : '';
  return { ...compiled, classpath };
}

/** A Python 3 that can load the generated package, or why this machine has none. */
export type PythonRuntime = { python: string } | { unavailable: string };

// Checks the running Python against the generated package's pyproject.toml (requires-python) and
// requirements.txt (`name >= a, < b` lines), and prints what falls short; 7.25's package needs
// Python 3.10, pydantic >= 2.11 and urllib3 >= 2.7.
const PROBE = `
import importlib.metadata as metadata, os, re, sys
key = lambda version: [int(part) for part in re.findall(r'[0-9]+', version)[:3]]
package = os.path.dirname(sys.argv[1])
python = re.search(r'requires-python = ">=([0-9.]+)"', open(os.path.join(package, 'pyproject.toml')).read())
have = '%d.%d' % sys.version_info[:2]
short = ['Python %s (needs >= %s)' % (have, python[1])] if python and key(have) < key(python[1]) else []
for line in open(sys.argv[1]):
    name, _, spec = line.strip().partition(' ')
    try:
        have = metadata.version(name) if name else None
    except metadata.PackageNotFoundError:
        short.append(name + ' (not installed)')
        continue
    for op, want in re.findall(r'(>=|<)\\s*([0-9.]+)', spec):
        if (key(have) >= key(want)) != (op == '>='):
            short.append('%s %s (needs %s %s)' % (name, have, op, want))
print('; '.join(short))
sys.exit(1 if short else 0)
`;

// Debian's package for each requirement of the generated package, for /usr/bin/python3.
const DEBIAN_PACKAGES: Record<string, string> = {
  urllib3: 'python3-urllib3', python_dateutil: 'python3-dateutil', pydantic: 'python3-pydantic', 'typing-extensions': 'python3-typing-extensions',
};

async function shortfall(python: string, requirements: string): Promise<string | undefined> {
  const probe = await run(python, ['-c', PROBE, requirements]);
  return probe.ok ? undefined : probe.output.trim().split('\n')[0] || `${python} did not run`;
}

/** Debian's candidate version of a package (epoch and revision dropped), after an `apt-get update` if it knows none. */
async function debianCandidate(name: string): Promise<string | undefined> {
  const candidate = async () => /Candidate: (?:[0-9]+:)?([0-9][^\s-]*)/.exec((await run('apt-cache', ['policy', name])).output)?.[1];
  const known = await candidate();
  if (known !== undefined) return known;
  await run('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'update']);
  return candidate();
}

/** Compares two versions by their first three numbers. */
function compareVersions(a: string, b: string): number {
  const [x, y] = [a, b].map((version) => (version.match(/[0-9]+/g) ?? []).map(Number));
  for (let i = 0; i < 3; i += 1) if ((x![i] ?? 0) !== (y![i] ?? 0)) return (x![i] ?? 0) - (y![i] ?? 0);
  return 0;
}

/** Whether `version` meets a requirements.txt range such as `>= 2.7.0, < 3.0.0`. */
function meets(version: string, range: string): boolean {
  return [...range.matchAll(/(>=|<)\s*([0-9.]+)/g)].every(([, op, bound]) => (compareVersions(version, bound!) >= 0) === (op === '>='));
}

/**
 * The Python to run the generated package in `clientDir` with: `python3` on PATH, else Debian's
 * /usr/bin/python3, with Debian's packages installed (as root) when their versions meet the
 * package's requirements.txt. Debian 12 has pydantic 1.10 and urllib3 1.26, which do not, and no
 * other package source (PyPI) is reached from here: then the reason, for the tests to skip with.
 */
export async function pythonRuntime(clientDir: string): Promise<PythonRuntime> {
  const requirements = join(clientDir, 'requirements.txt');
  const tried: string[] = [];
  for (const python of ['python3', '/usr/bin/python3']) {
    const short = await shortfall(python, requirements);
    if (short === undefined) return { python };
    tried.push(`${python}: ${short}`);
  }
  const wanted = readFileSync(requirements, 'utf8').split('\n').map((line) => line.trim().split(/\s(.*)/s)).filter(([name]) => name);
  const debian = [];
  for (const [name, range = ''] of wanted) {
    const pkg = DEBIAN_PACKAGES[name!];
    const version = pkg ? await debianCandidate(pkg) : undefined;
    debian.push({ pkg, version, ok: pkg !== undefined && version !== undefined && meets(version, range), want: `${name} ${range}` });
  }
  const unmet = debian.filter((d) => !d.ok).map((d) => `${d.want} (Debian: ${d.pkg ?? 'no package'} ${d.version ?? 'not found'})`);
  if (unmet.length > 0) return { unavailable: `no Python here meets the generated package's requirements (${tried.join('; ')}), nor do Debian's packages: ${unmet.join(', ')}` };
  if (process.getuid?.() !== 0) return { unavailable: `${tried.join('; ')}; installing Debian's ${debian.map((d) => d.pkg).join(' ')} needs root` };
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const installed = await run('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', '--no-install-recommends', ...debian.map((d) => d.pkg!)], { env });
  const short = installed.ok ? await shortfall('/usr/bin/python3', requirements) : installed.output;
  return short === undefined ? { python: '/usr/bin/python3' } : { unavailable: `Debian's packages did not give /usr/bin/python3 the requirements: ${short}` };
}

/** Imports every module of the generated package (`dir/client/openapi_client`): Python's build. */
export function importPython(python: string, dir: string): Promise<Outcome> {
  const importAll = [
    'import importlib, pkgutil, openapi_client as package',
    "names = [module.name for module in pkgutil.walk_packages(package.__path__, 'openapi_client.')]",
    'for name in names: importlib.import_module(name)',
    "print(len(names) + 1, 'modules import')",
  ].join('\n');
  return run(python, ['-B', '-c', importAll], { cwd: join(dir, 'client'), env: { ...process.env, PYTHONPATH: join(dir, 'client') } });
}

/** What a caller program is told: where the service is, its key, and the image it names. */
export interface CallerSettings {
  apiUrl: string;
  apiKey: string;
  imageUrl: string;
  imageFile: string;
  /** Unique to this program and run: the start of its external ids. */
  run: string;
  waitMs: number;
}

function callerEnv(settings: CallerSettings): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CATALOG_API_URL: settings.apiUrl,
    CATALOG_API_KEY: settings.apiKey,
    CATALOG_IMAGE_URL: settings.imageUrl,
    CATALOG_IMAGE_FILE: settings.imageFile,
    CATALOG_RUN: settings.run,
    CATALOG_WAIT_MS: String(settings.waitMs),
  };
}

export function runTypeScriptCaller(dir: string, settings: CallerSettings): Promise<Outcome> {
  return run(process.execPath, [join(dir, 'out/check.js')], { cwd: dir, env: callerEnv(settings) });
}

/** Runs CatalogCheck.java in source-file mode on the compiled client's classpath. */
export function runJavaCaller(classpath: string, settings: CallerSettings): Promise<Outcome> {
  return run('java', ['-cp', classpath, join(CALLERS, 'CatalogCheck.java')], { env: callerEnv(settings) });
}

/** Runs check.py (with open_enums.py beside it) on the generated package in `dir/client`. */
export function runPythonCaller(python: string, dir: string, settings: CallerSettings): Promise<Outcome> {
  for (const file of ['check.py', 'open_enums.py']) copyFileSync(join(CALLERS, file), join(dir, file));
  return run(python, ['-B', join(dir, 'check.py')], { cwd: dir, env: { ...callerEnv(settings), PYTHONPATH: join(dir, 'client') } });
}
