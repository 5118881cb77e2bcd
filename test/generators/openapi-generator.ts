// `npm run test:generators`: the clients openapi-generator makes from openapi.yaml (typescript-fetch,
// java with okhttp-gson, python) build with zero errors, then do a client team's work against a
// started service: upsert, list, an answer from a newer service, an import through its uploadUrl
// with its results and failed lines, events, a stored image read back.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { TestContext } from 'node:test';
import { makeImage, startImageOrigin } from '../helpers/image-origin.ts';
import type { ImageOrigin } from '../helpers/image-origin.ts';
import { IMPORT_STALL_MS } from '../helpers/imports.ts';
import { SETTLE_MS } from '../helpers/media.ts';
import {
  OPENAPI_GENERATOR_VERSION, compileJava, compileTypeScript, generate, generatorJar, importPython, pythonRuntime, runJavaCaller,
  runPythonCaller, runTypeScriptCaller,
} from '../helpers/openapi-generator.ts';
import type { CallerSettings, GeneratorName, Outcome } from '../helpers/openapi-generator.ts';
import { spawnService } from '../helpers/spawned-service.ts';
import type { SpawnedService } from '../helpers/spawned-service.ts';
import { runId } from '../helpers/test-run.ts';

// A caller's waits for an import or an image: an import's longest pause by design plus the
// time a media job may take to settle. A deadline that stops a wait that would never end; a
// pass never waits for it.
const CALLER_WAIT_MS = IMPORT_STALL_MS + SETTLE_MS;

interface Bed {
  readonly service: SpawnedService;
  readonly origin: ImageOrigin;
}

/** A built client: the classpath of the Java one, the Python that runs the Python one, or why this machine cannot. */
type Built = Outcome & { classpath?: string; python?: string; skipped?: string };

const dir = mkdtempSync(join(tmpdir(), 'catalog-generators-'));
const began = performance.now();
let compiled: Record<GeneratorName, Promise<Built>>;
let bed: Promise<Bed>;

/** Builds a generated client with its own toolchain; Python's build is importing every module. */
async function build(generator: GeneratorName, out: string): Promise<Built> {
  if (generator === 'java') return compileJava(out);
  if (generator === 'typescript-fetch') return compileTypeScript(out);
  const runtime = await pythonRuntime(join(out, 'client'));
  if ('unavailable' in runtime) return { ok: false, output: runtime.unavailable, skipped: runtime.unavailable };
  return { ...await importPython(runtime.python, out), python: runtime.python };
}

/** Generates one client into its own folder, then builds it; the outcome of the first step that failed. */
async function generateAndCompile(jar: string, generator: GeneratorName): Promise<Built> {
  const started = performance.now();
  const out = join(dir, generator);
  try {
    mkdirSync(out);
    const generated = await generate(jar, generator, generator === 'java' ? out : join(out, 'client'));
    if (!generated.ok) return { ok: false, output: `generation failed:\n${generated.output}` };
    const result = await build(generator, out);
    process.stdout.write(`# ${generator}: generated and built in ${seconds(started)} s\n`);
    return result.ok || result.skipped ? result : { ...result, output: `build failed:\n${result.output}` };
  } catch (error) {
    return { ok: false, output: String(error) };
  }
}

const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1);

async function startBed(): Promise<Bed> {
  const origin = await startImageOrigin();
  try {
    // Downloads may reach the image origin on loopback.
    return { origin, service: await spawnService(import.meta.filename, 'node', { env: { OUTBOUND_ALLOW_PRIVATE: 'true' } }) };
  } catch (error) {
    await origin.close();
    throw error;
  }
}

before(() => {
  // The service, the three generators and their builds run side by side; each test awaits its part.
  bed = startBed();
  bed.catch(() => undefined);
  const jarStarted = performance.now();
  const jar = generatorJar();
  process.stdout.write(`# openapi-generator-cli ${OPENAPI_GENERATOR_VERSION} ready in ${seconds(jarStarted)} s (${jar})\n`);
  compiled = {
    'typescript-fetch': generateAndCompile(jar, 'typescript-fetch'), java: generateAndCompile(jar, 'java'), python: generateAndCompile(jar, 'python'),
  };
});

after(async () => {
  const started = await bed.then((b) => b, () => undefined);
  await started?.service.stop();
  await started?.origin.close();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`# test:generators took ${seconds(began)} s\n`);
});

const GENERATORS: GeneratorName[] = ['typescript-fetch', 'java', 'python'];

for (const generator of GENERATORS) {
  const built = generator === 'python' ? 'every module of the generated package imports' : 'the generated client compiles with zero errors';
  test(`${generator}: ${built}`, async (t) => {
    const result = await compiled[generator];
    if (result.skipped) return t.skip(result.skipped);
    assert.ok(result.ok, result.output);
    if (result.python) t.diagnostic(`${result.output.trim()} in ${result.python}`);
  });
}

/** Runs one caller program on its own tenant and image; its own report is the test's diagnostic. */
async function runCaller(t: TestContext, generator: GeneratorName): Promise<void> {
  const client = await compiled[generator];
  if (client.skipped) return t.skip(client.skipped);
  assert.ok(client.ok, `the ${generator} client did not build`);
  const { service, origin } = await bed;
  const tenant = await service.newTenant();
  const image = await makeImage('jpeg', 320, 240, generator.length);
  const imageFile = join(dir, `${generator}.jpg`);
  writeFileSync(imageFile, image);
  origin.serve(`/${generator}.jpg`, { body: image, contentType: 'image/jpeg' });
  const settings: CallerSettings = {
    apiUrl: service.apiUrl, apiKey: tenant.key, imageUrl: origin.at(`/${generator}.jpg`), imageFile,
    run: `${runId()}-${generator}`, waitMs: CALLER_WAIT_MS,
  };
  const started = performance.now();
  const result = generator === 'java' ? await runJavaCaller(client.classpath!, settings)
    : generator === 'python' ? await runPythonCaller(client.python!, join(dir, generator), settings)
    : await runTypeScriptCaller(join(dir, generator), settings);
  for (const line of result.output.trim().split('\n')) t.diagnostic(line);
  t.diagnostic(`ran in ${seconds(started)} s`);
  assert.ok(result.ok, result.output);
}

for (const generator of GENERATORS) {
  test(`${generator}: a program on the client does the work against the service`, (t) => runCaller(t, generator));
}
