// The `catalog` command: serve, migrate, and the operator's catalog, key, console-link, webhook-pace and secrets-key management, and the audit log.
import { parseArgs } from 'node:util';
import { ProductError } from '../platform/errors.ts';
import { ConfigError, loadConfig } from '../platform/config/config.ts';
import { UsageError } from './usage-error.ts';

// Each command's lines of the usage text; `catalog <command> --help` prints its own.
const COMMANDS: Record<string, string> = {
  serve: `  serve [--role api|consumers|all]        start the service (default role: all, or ROLE)
`,
  migrate: `  migrate                                 create the database if missing and apply migrations
`,
  catalogs: `  catalogs create --name NAME --owner-email EMAIL
                                          create a catalog; prints its id on the last line
`,
  keys: `  keys create --catalog NAME_OR_ID --scopes a,b --tier free|pro|enterprise [--rate-limit N]
              [--allow CIDR,CIDR] [--expires-at ISO | --expires-in 90d]
                                          issue an API key; prints the key alone on the last line
                                          (--rate-limit: requests per minute instead of the tier's;
                                          --allow: the only client addresses it may be used from)
  keys list --catalog NAME_OR_ID          list a catalog's keys (never the keys themselves)
  keys update KEY_ID [--allow CIDR,CIDR | --allow-any] [--expires-at ISO | --expires-in 90d | --no-expiry]
                                          change a key's address ranges or expiry
  keys revoke KEY_ID                      revoke a key at once
`,
  console: `  console --catalog NAME_OR_ID [--scopes a,b | --read-only] [--redeem-minutes N] [--session-minutes N] [--label TEXT]
                                          mint a single-use link to the browser console; prints the
                                          URL alone on the last line (default: every catalog scope,
                                          redeemable for 15 minutes, a session of 480)
`,
  import: `  import FILE.jsonl [--wait] [--errors OUT.jsonl] [--results OUT.jsonl] [--failed-lines OUT.jsonl]
                                          bulk-import a JSONL file through the API (CATALOG_API_URL,
                                          CATALOG_API_KEY); files over 100 MB become several jobs;
                                          a file option waits and writes every job's file
  import --from URL [--header 'Name: value']… [--if-changed] [--wait] [files]
                                          the service fetches the file from an address (https);
                                          --if-changed: an unchanged source completes at once
  import --retry JOB_ID [--wait] [files]  import a finished job's failed lines again, as they were
  import --job JOB_ID [files]             wait for jobs already made, then write their files
`,
  webhooks: `  webhooks list --catalog NAME_OR_ID      list a catalog's webhooks: id, url, status, rate limit, and
                                          their backlog (pending, the oldest's creation, a 429's pause)
  webhooks rate-limit WEBHOOK_ID (--per-second N [--max-in-flight M] | --clear)
                                          set or clear a webhook's pace as its owner's PATCH does
                                          (N above 0 and at most 10000, M from 1 to 1000): the
                                          deliveries waiting are spread over the new pace at once
`,
  outbox: `  outbox parked [--catalog ID] [--all]    list the records the broker refused for good (--all: re-sent too)
  outbox resend RECORD_ID | --all [--catalog ID]
                                          send parked records again, unchanged
`,
  secrets: `  secrets status                          how many values sealed at rest (webhook secrets, import
                                          headers, stored idempotent answers) each key seals
  secrets rotate                          re-seal every value not sealed with SECRETS_KEY (old keys in
                                          SECRETS_OLD_KEYS), a few hundred rows a transaction
`,
  audit: `  audit [--catalog NAME_OR_ID] [--actor KEY_ID|cli|service] [--action ACTION] [--resource TYPE[:ID]]
        [--since ISO] [--until ISO] [--limit N] [--json]
                                          who changed what, newest first: keys, webhooks, imports, console
                                          sessions (default: the last 50 entries of every catalog;
                                          --json: one entry a line, with its settings before and after)
`,
  doctor: `  doctor                                  check the configuration, the database, the broker and the
                                          storage this environment names, and say what is wrong
`,
};

const USAGE = `Usage: catalog <command> [options]

Commands:
${Object.values(COMMANDS).join('')}
  --help (after any command: its own), --version
`;

const commandUsage = (command: string) => `Usage: catalog ${command} [options]\n\n${COMMANDS[command]}`;

/** The version of the package this CLI belongs to. */
async function version(): Promise<string> {
  const { default: pkg } = await import('../package.json', { with: { type: 'json' } });
  return pkg.version;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === '--version' || command === '-V') {
    process.stdout.write(`catalog ${await version()}\n`);
    return 0;
  }
  if (command in COMMANDS && (rest.includes('--help') || rest.includes('-h'))) {
    process.stdout.write(commandUsage(command));
    return 0;
  }
  // Each command's module is loaded when it runs: a service process does without the import
  // command's generated client and progress bar, the doctor's probes and the key store.
  switch (command) {
    case 'serve': {
      const { values } = parseArgs({ args: rest, options: { role: { type: 'string' } }, strict: true });
      const env = values.role === undefined ? process.env : { ...process.env, ROLE: values.role };
      return (await import('./serve.ts')).runServe(loadConfig(env));
    }
    case 'migrate':
      parseArgs({ args: rest, options: {}, strict: true });
      return (await import('./serve.ts')).runMigrate(loadConfig());
    case 'catalogs':
    case 'keys':
      return (await import('./access.ts')).runAccessCommand(loadConfig(), command, rest);
    case 'console':
      return (await import('./console.ts')).runConsoleCommand(loadConfig(), rest);
    case 'webhooks':
      return (await import('./webhooks.ts')).runWebhooksCommand(loadConfig(), rest);
    case 'outbox':
      return (await import('./outbox.ts')).runOutboxCommand(loadConfig(), rest);
    case 'secrets':
      return (await import('./secrets.ts')).runSecretsCommand(loadConfig(), rest);
    case 'audit':
      return (await import('./audit.ts')).runAuditCommand(loadConfig(), rest);
    case 'import':
      // A client of the API: needs CATALOG_API_URL and CATALOG_API_KEY, not the service's configuration.
      return (await import('./import.ts')).runImportCommand(rest);
    case 'doctor':
      parseArgs({ args: rest, options: {}, strict: true });
      return (await import('./doctor.ts')).runDoctor();
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    const own = error instanceof UsageError && error.command !== undefined ? error.command : process.argv[2];
    process.stderr.write(`catalog: ${(error as Error).message}\n\n${own !== undefined && own in COMMANDS ? commandUsage(own) : USAGE}`);
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
