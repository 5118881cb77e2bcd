// `npm run test:generators`: the clients openapi-generator makes from openapi.yaml (typescript-fetch,
// and java with okhttp-gson) compile with zero errors, then do a client team's work against a
// started service: upsert, list, an import through its uploadUrl, events, a stored image read back.
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
  OPENAPI_GENERATOR_VERSION, compileJava, compileTypeScript, generate, generatorJar, runJavaCaller, runTypeScriptCaller,
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

const dir = mkdtempSync(join(tmpdir(), 'catalog-generators-'));
const began = performance.now();
let compiled: Record<GeneratorName, Promise<Outcome & { classpath?: string }>>;
let bed: Promise<Bed>;

/** Generates one client into its own folder, then compiles it; the outcome of the first step that failed. */
async function generateAndCompile(jar: string, generator: GeneratorName): Promise<Outcome & { classpath?: string }> {
  const started = performance.now();
  const out = join(dir, generator);
  try {
    mkdirSync(out);
    const generated = await generate(jar, generator, generator === 'java' ? out : join(out, 'client'));
    if (!generated.ok) return { ok: false, output: `generation failed:\n${generated.output}` };
    const result = generator === 'java' ? await compileJava(out) : await compileTypeScript(out);
    process.stdout.write(`# ${generator}: generated and compiled in ${seconds(started)} s\n`);
    return result.ok ? result : { ...result, output: `compilation failed:\n${result.output}` };
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
  // The service, the two generators and the two compilers run side by side; each test awaits its part.
  bed = startBed();
  bed.catch(() => undefined);
  const jarStarted = performance.now();
  const jar = generatorJar();
  process.stdout.write(`# openapi-generator-cli ${OPENAPI_GENERATOR_VERSION} ready in ${seconds(jarStarted)} s (${jar})\n`);
  compiled = { 'typescript-fetch': generateAndCompile(jar, 'typescript-fetch'), java: generateAndCompile(jar, 'java') };
});

after(async () => {
  const started = await bed.then((b) => b, () => undefined);
  await started?.service.stop();
  await started?.origin.close();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`# test:generators took ${seconds(began)} s\n`);
});

for (const generator of ['typescript-fetch', 'java'] as const) {
  test(`${generator}: the generated client compiles with zero errors`, async () => {
    const result = await compiled[generator];
    assert.ok(result.ok, result.output);
  });
}

/** Runs one caller program on its own tenant and image; its own report is the test's diagnostic. */
async function runCaller(t: TestContext, generator: GeneratorName): Promise<void> {
  const client = await compiled[generator];
  assert.ok(client.ok, `the ${generator} client did not compile`);
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
  const result = generator === 'java'
    ? await runJavaCaller(client.classpath!, settings)
    : await runTypeScriptCaller(join(dir, generator), settings);
  for (const line of result.output.trim().split('\n')) t.diagnostic(line);
  t.diagnostic(`ran in ${seconds(started)} s`);
  assert.ok(result.ok, result.output);
}

test('typescript-fetch: a program on the client does the work against the service', (t) => runCaller(t, 'typescript-fetch'));
test('java: a program on the client does the work against the service', (t) => runCaller(t, 'java'));
