import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Starts the real sheetlog binary once for the whole run (test/global-setup.ts).
    globalSetup: ["./test/global-setup.ts"],
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
