/** Validators over the committed contract documents (docs/contract/, generated from the engine's Structs). */
import { readFileSync } from "node:fs";
import { join } from "node:path";

import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";

export const CONTRACT_DIR = join(__dirname, "..", "..", "..", "..", "docs", "contract");

export function loadDoc(name: string): any {
  return JSON.parse(readFileSync(join(CONTRACT_DIR, name), "utf8"));
}

// strict: false ignores msgspec's OpenAPI-style `discriminator` objects (annotations, not assertions).
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(loadDoc("events.schema.json"));
ajv.addSchema(loadDoc("rpc.schema.json"));

/** The validation errors of `value` against `#/$defs/<def>` of `doc` (`events` or `rpc`); empty when valid. */
export function errors(doc: "events" | "rpc", def: string, value: unknown): string[] {
  const validate = ajv.getSchema(`memengine/${doc}.schema.json#/$defs/${def}`);
  if (!validate) throw new Error(`no definition ${def} in ${doc}.schema.json`);
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

/** The property names of `#/$defs/<def>`. */
export function properties(doc: "events" | "rpc", def: string): string[] {
  return Object.keys(loadDoc(`${doc}.schema.json`).$defs[def].properties).sort();
}
