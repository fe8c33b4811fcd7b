export function waitForHttp(
  url: string,
  child: { exitCode: number | null },
  ms: number,
  pollMs: number,
): Promise<boolean>;
