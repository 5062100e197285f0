// The formula engine's entry point, bundled by scripts/vendor-console into
// console/vendor/formula-engine.js (one ES module, no imports, nothing fetched at run time):
// fast-formula-parser (the parser and evaluator, ~280 functions) and @formulajs/formulajs
// (the function library that fills what the parser lacks: MIN, MAX, UPPER, MATCH...).
import FormulaParser from 'fast-formula-parser';
import * as formulajs from '@formulajs/formulajs';

export const {FormulaError, MAX_ROW, MAX_COLUMN} = FormulaParser;
export {FormulaParser, formulajs};
