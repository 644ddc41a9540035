/** The output, errors and flags every `coffer` command shares; light enough for the parser to load. */

export interface Io {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean; columns?: number };
  env: NodeJS.ProcessEnv;
}

export const defaultIo = (): Io => ({ stdout: process.stdout, stderr: process.stderr, env: process.env });

/** A failure of the command itself, reported as its message alone. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
  }
}

export interface ClientFlags {
  url?: string;
  key?: string;
}
