// What test/server.mjs provides to the tests.
declare module "vitest" {
  export interface ProvidedContext {
    sheetlogUrl: string;
  }
}
export {};
