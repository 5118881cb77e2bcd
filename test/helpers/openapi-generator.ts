// openapi-generator as a client team runs it: its CLI jar from Maven Central (cached in .cache/),
// the typescript-fetch and java (okhttp-gson) clients generated from openapi.yaml, each compiled
// with its own toolchain (the project's tsc, Maven), and the caller programs that use them.
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
 * The options docs/generating-clients.md gives. typescript-fetch leaves out the `webhooks` section
 * (7.25 writes its class with empty imports); java reads an absent `additionalProperties` as open,
 * as JSON Schema does, and maps an enum value it does not know to a case of its own, so an answer
 * with fields or enum values added later (the contract's versioning rule) still reads.
 */
export const GENERATORS = {
  'typescript-fetch': ['-g', 'typescript-fetch', '--global-property', 'apis,models,supportingFiles'],
  java: [
    '-g', 'java', '--library', 'okhttp-gson',
    '--additional-properties', 'disallowAdditionalPropertiesIfNotPresent=false,enumUnknownDefaultCase=true',
  ],
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
