export function executable(file: string): boolean;
export function installPlan(input: {
  binaries: string[];
  optOut: string;
  env: Record<string, string | undefined>;
  uid: number | null;
  isExecutable?: (file: string) => boolean;
  hasAptGet?: () => boolean;
}): "present" | "install" | "refused" | "no-apt";
export function currentUid(): number | null;
export function aptInstall(options: { pkg: string; env?: NodeJS.ProcessEnv; logFile: string }): boolean;
export const PROMETHEUS_BINARIES: string[];
export function ensurePrometheus(options: { env?: NodeJS.ProcessEnv; logDir: string; log: (line: string) => void }): {
  installed: boolean;
  problem: string | null;
};
