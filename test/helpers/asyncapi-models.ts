// The TypeScript models Modelina makes of asyncapi.yaml (test/generators/modelina), compiled in strict mode by the project's tsc, and a check of values against their types.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';

const ROOT = resolve(import.meta.dirname, '../..');
const GENERATOR = join(ROOT, 'test/generators/modelina/generate.ts');
// What the models are made from: a change to any of them makes them again.
const INPUTS = ['asyncapi.yaml', 'openapi.yaml', 'test/generators/modelina/generate.ts', 'test/generators/modelina/package.json', 'tsconfig.json'];

/** A channel's message and the names of the models of its payload and headers (null: the schema has no name). */
export interface ModelledMessage {
  readonly name: string;
  readonly payload: string | null;
  readonly headers: string | null;
}

export interface AsyncApiModels {
  /** The folder holding models.ts, schemas.json and manifest.json. */
  readonly dir: string;
  /** Every model's name, in the order Modelina made them. */
  readonly models: readonly string[];
  /** By channel address (`{prefix}catalog.events.v1`). */
  readonly channels: Readonly<Record<string, readonly ModelledMessage[]>>;
  /** The models' types as typescript-json-schema writes them, by model name. */
  readonly schemas: Readonly<Record<string, object>>;
  /** What is wrong with `value` as the TypeScript type `model` (nothing when it fits). */
  problems(model: string, value: unknown): string[];
}

function run(command: string, args: string[], what: string): void {
  const result = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`${what} failed (${result.status ?? result.signal}):\n${result.stdout}${result.stderr}`.slice(0, 20_000));
}

/**
 * The models of the documents as they are now, in .cache/asyncapi-models/<hash of the inputs>:
 * made by Modelina and compiled by the project's tsc with its own settings (strict, erasable
 * syntax only) when that folder is missing. Made aside and renamed into place, so test files
 * starting together never see half a folder.
 */
export function ensureAsyncApiModels(): string {
  const hash = createHash('sha256');
  for (const input of INPUTS) hash.update(readFileSync(join(ROOT, input)));
  const dir = join(ROOT, '.cache', 'asyncapi-models', hash.digest('hex').slice(0, 16));
  if (existsSync(dir)) return dir;
  const building = `${dir}.${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  run(process.execPath, [GENERATOR, join(ROOT, 'asyncapi.yaml'), building], 'Modelina');
  writeFileSync(join(building, 'tsconfig.json'), JSON.stringify({ extends: join(ROOT, 'tsconfig.json'), include: ['models.ts'], exclude: [] }));
  run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(building, 'tsconfig.json')], 'Compiling the models');
  try {
    renameSync(building, dir);
  } catch (error) {
    if (!existsSync(dir)) throw error;
    rmSync(building, { recursive: true, force: true });
  }
  return dir;
}

let loaded: AsyncApiModels | undefined;

/** The models, made if need be, loaded once per process. */
export function asyncApiModels(): AsyncApiModels {
  if (loaded) return loaded;
  const dir = ensureAsyncApiModels();
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { models: string[]; channels: Record<string, ModelledMessage[]> };
  const { $schema: _draft, definitions } = JSON.parse(readFileSync(join(dir, 'schemas.json'), 'utf8')) as { $schema: string; definitions: Record<string, object> };
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  ajv.addSchema({ definitions }, 'models');
  const validators = new Map<string, ValidateFunction>();
  loaded = {
    dir,
    models: manifest.models,
    channels: manifest.channels,
    schemas: definitions,
    problems(model, value) {
      if (!(model in definitions)) return [`no model ${model}`];
      let validate = validators.get(model);
      if (!validate) validators.set(model, validate = ajv.compile({ $ref: `models#/definitions/${encodeURIComponent(model)}` }));
      if (validate(value)) return [];
      return validate.errors!.slice(0, 6).map((e) =>
        `${model}${e.instancePath} ${e.message}${e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : ''}`);
    },
  };
  return loaded;
}
