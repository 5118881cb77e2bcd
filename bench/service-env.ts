// The environment `npm start` and the service's image give the service's processes, for benchmarks that start them on their own.
/**
 * glibc gives each thread that allocates its own malloc arena (up to 8 per core); libvips'
 * threads in sharp leave their arenas' freed pages mapped, which shows as peak RSS. Two arenas
 * keep it down at no cost measured in speed (bench/results/2026-11-24-media.md).
 */
export const SERVICE_PROCESS_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
};
