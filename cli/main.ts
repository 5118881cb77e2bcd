// The `catalog` command: serve, migrate, and the operator's catalog and key management.
import { parseArgs } from 'node:util';
import { ProductError } from '../platform/errors.ts';
import { ConfigError, loadConfig } from '../platform/config/config.ts';
import { runAccessCommand } from './access.ts';
import { runImportCommand } from './import.ts';
import { runMigrate, runServe } from './serve.ts';
import { UsageError } from './usage-error.ts';

const USAGE = `Usage: catalog <command> [options]

Commands:
  serve [--role api|consumers|all]        start the service (default role: all, or ROLE)
  migrate                                 create the database if missing and apply migrations
  catalogs create --name NAME --owner-email EMAIL
                                          create a catalog; prints its id on the last line
  keys create --catalog NAME_OR_ID --scopes a,b --tier free|pro|enterprise [--rate-limit N]
                                          issue an API key; prints the key alone on the last line
                                          (--rate-limit: requests per minute instead of the tier's)
  keys list --catalog NAME_OR_ID          list a catalog's keys (never the keys themselves)
  keys revoke KEY_ID                      revoke a key at once
  import FILE.jsonl [--wait] [--errors OUT.jsonl]
                                          bulk-import a JSONL file through the API (CATALOG_API_URL,
                                          CATALOG_API_KEY); files over 100 MB become several jobs
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  switch (command) {
    case 'serve': {
      const { values } = parseArgs({ args: rest, options: { role: { type: 'string' } }, strict: true });
      const env = values.role === undefined ? process.env : { ...process.env, ROLE: values.role };
      return runServe(loadConfig(env));
    }
    case 'migrate':
      parseArgs({ args: rest, options: {}, strict: true });
      return runMigrate(loadConfig());
    case 'catalogs':
    case 'keys':
      return runAccessCommand(loadConfig(), command, rest);
    case 'import':
      // A client of the API: needs CATALOG_API_URL and CATALOG_API_KEY, not the service's configuration.
      return runImportCommand(rest);
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`catalog: ${(error as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
  } else if (error instanceof ProductError) {
    const details = error.details?.map((d) => `\n  ${d.path}: ${d.message}`).join('') ?? '';
    process.stderr.write(`catalog: ${error.message}${details}\n`);
    process.exitCode = 1;
  } else if (error instanceof ConfigError) {
    process.stderr.write(`catalog: configuration: ${error.message}\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`catalog: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  }
}
