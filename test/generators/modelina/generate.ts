// Makes TypeScript models of asyncapi.yaml with Modelina, as a downstream team would, and a JSON Schema of those TypeScript types: `node generate.ts ASYNCAPI_YAML OUT_DIR`.
// OUT_DIR/models.ts holds every model; schemas.json the models' types as JSON Schema (typescript-json-schema); manifest.json each channel's messages with the models of their payload and headers.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import modelina from '@asyncapi/modelina';
import tjs from 'typescript-json-schema';

const { AsyncAPIInputProcessor, TypeScriptGenerator } = modelina;

// The settings for models of JSON as JSON.parse gives it: plain interfaces with the wire's property
// names, unions for enums (Node's type stripping refuses `enum`), index signatures for free-form objects.
const generator = new TypeScriptGenerator({ modelType: 'interface', enumType: 'union', mapType: 'indexedObject', rawPropertyNames: true, moduleSystem: 'ESM' });

interface Schema { title(): string | undefined; json(): object }
interface Message { name(): string | undefined; id(): string; payload(): Schema | undefined; headers(): Schema | undefined }
interface Channel { address(): string | null | undefined; messages(): { all(): Message[] } }
interface Document { channels(): { all(): Channel[] } }

const [source, outDir] = process.argv.slice(2);
if (!source || !outDir) throw new Error('usage: node generate.ts ASYNCAPI_YAML OUT_DIR');

// One parse for both: Modelina's AsyncAPI input makes the payloads' models (its own way, from
// the channels' operations), the parsed document gives each message's headers schema.
const input = await new AsyncAPIInputProcessor().process(pathToFileURL(resolve(source)).href);
const document = input.originalInput as Document;
const models = new Map<string, string>();
for (const model of await generator.generate(input)) models.set(model.modelName, model.result);
const headers = new Map<string, object>();
const manifest: Record<string, Array<{ name: string; payload: string | null; headers: string | null }>> = {};
for (const channel of document.channels().all()) {
  manifest[String(channel.address())] = channel.messages().all().map((message) => {
    const schema = message.headers();
    const title = schema?.title();
    if (schema && title) headers.set(title, schema.json());
    return { name: message.name() ?? message.id(), payload: message.payload()?.title() ?? null, headers: title ?? null };
  });
}
// Headers are not among the models Modelina makes of an AsyncAPI document: each set as a JSON Schema.
for (const schema of headers.values()) {
  for (const model of await generator.generate(schema)) models.set(model.modelName, model.result);
}

mkdirSync(outDir, { recursive: true });
const modelsFile = join(outDir, 'models.ts');
writeFileSync(modelsFile, `${[...models.values()].map((code) => `export ${code}`).join('\n\n')}\n`);
writeFileSync(join(outDir, 'manifest.json'), JSON.stringify({ models: [...models.keys()], channels: manifest }, null, 2));
const program = tjs.getProgramFromFiles([modelsFile], { strict: true, target: 'es2022', skipLibCheck: true });
const schemas = tjs.generateSchema(program, '*', { required: true, noExtraProps: true, ignoreErrors: false });
if (!schemas) throw new Error('typescript-json-schema made no schema of the models');
writeFileSync(join(outDir, 'schemas.json'), JSON.stringify(schemas, null, 2));
