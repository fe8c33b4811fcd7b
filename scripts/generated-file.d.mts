export function writeOrCheck(out: string | URL, text: string, staleMessage: string): boolean;
