// What test/global-setup.ts provides to the tests.
declare module "vitest" {
  export interface ProvidedContext {
    sheetlogUrl: string;
  }
}
export {};
