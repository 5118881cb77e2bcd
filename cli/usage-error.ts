// A mistake in how the command was called: reported with the usage text and exit code 2.
export class UsageError extends Error {
  override name = 'UsageError';
}
