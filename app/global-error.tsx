"use client";

/**
 * Shown when the console's own layout fails (for instance the session lookup could not reach
 * PostgreSQL): it replaces the whole document, so it brings its own title and colours (WCAG AA in
 * light and dark) and never a stack trace.
 */
export default function GlobalError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <html lang="en">
      <head>
        <title>Workhorse console: unexpected error</title>
      </head>
      <body
        style={{
          fontFamily: "system-ui, sans-serif",
          padding: "2rem",
          color: "#0f172a",
          background: "#ffffff",
          colorScheme: "light",
        }}
      >
        <main>
          <h1>The console hit an unexpected error</h1>
          <p>
            It may not reach its database right now (PostgreSQL restarting or unreachable).{" "}
            {error.digest ? `Reference ${error.digest} (in the server log).` : "See the server log."}
          </p>
          <button
            type="button"
            onClick={() => reset()}
            style={{
              color: "#ffffff",
              background: "#1d4ed8",
              border: "none",
              borderRadius: "0.375rem",
              padding: "0.5rem 0.75rem",
              font: "inherit",
            }}
          >
            Try again
          </button>
        </main>
      </body>
    </html>
  );
}
