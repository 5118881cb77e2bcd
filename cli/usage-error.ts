// A mistake in how the command was called: reported with the usage text (the command's own, when known) and exit code 2.
export class UsageError extends Error {
  override name = 'UsageError';
  /** The command whose usage to show instead of the whole list, e.g. `keys`. */
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}
