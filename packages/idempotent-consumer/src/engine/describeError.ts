/** An error for a log line: its name and message, capped at 500 characters. */
export function describeError(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message.slice(0, 500) };
  return { name: typeof error, message: String(error).slice(0, 500) };
}
