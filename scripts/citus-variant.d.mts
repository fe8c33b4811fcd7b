export function hasCitusMarks(text: string): boolean;
export function citusVariant(file: string, text: string): string;
export function citusFileName(file: string, name: string, text: string): string;
