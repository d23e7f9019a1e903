// @ts-check
// Tool calls a small model cannot get wrong (docs/design.md, "A model in the page"): a GBNF
// grammar for llama.cpp's sampler that lets the model write either plain text or one or more
// calls, each naming an offered tool, its arguments valid against that tool's JSON Schema.
//
// The call syntax is the one SmolLM2 and Hermes-style models were trained on:
//   <tool_call>[{"name": "delete_file", "arguments": {"path": "C:/x.txt"}}]</tool_call>
//
// The JSON Schema subset turned into rules (what tool schemas use): `type` object (properties
// in their order, `required`; no other keys), string, number, integer, boolean, null, array
// (`items`, `minItems`/`maxItems` up to 8 items), a list of types; `enum` and `const` of
// scalars; `anyOf`/`oneOf`. Anything else (`$ref`, `pattern`, `format`, `allOf`, string
// lengths) becomes "any JSON value" here, and the engine's own validation of the arguments
// (src/schema) still refuses a call that breaks it.

export const CALL_OPEN = "<tool_call>";
const CALL_CLOSE = "</tool_call>";

const lit = (s) => JSON.stringify(s); // a GBNF string literal is a JSON string literal
const esc = (s) => lit(JSON.stringify(s)); // the rule that writes the JSON text of s

const BASE = String.raw`ws ::= ([ \t\n] ([ \t\n])?)?
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]) )* "\""
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
number ::= integer ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* )? ws "}"
array ::= "[" ws ( value ( ws "," ws value )* )? ws "]"`;

/**
 * The grammar for `tools` ({ name, parameters }[]). `required`: calls only, no text;
 * `textOnly`: text only, no call.
 * `parallel`: several calls in one answer; without it one (a small model asked for one
 * action tends to repeat its call until the token limit cuts it).
 */
export function toolGrammar(tools, { required = false, parallel = false, textOnly = false } = {}) {
  if (textOnly) return String.raw`root ::= [^<\x00] [^\x00]*`;
  const rules = new Map();
  let n = 0;
  const rule = (body) => {
    const name = `r${n++}`;
    rules.set(name, body);
    return name;
  };
  const calls = tools.map((t) => {
    const args = schemaRule(t.parameters ?? { type: "object" }, rule);
    return rule(`"{" ws ${esc("name")} ws ":" ws ${esc(t.name)} ws "," ws ${esc("arguments")} ws ":" ws ${args} ws "}"`);
  });
  const root = required ? "calls" : "calls | text";
  return [
    `root ::= ${root}`,
    // Text is anything that does not begin like a call.
    String.raw`text ::= [^<\x00] [^\x00]*`,
    `calls ::= ${lit(CALL_OPEN + "[")} ws call ${parallel ? '( ws "," ws call )* ' : ""}ws ${lit("]" + CALL_CLOSE)}`,
    `call ::= ${calls.join(" | ")}`,
    ...[...rules].map(([k, v]) => `${k} ::= ${v}`),
    BASE,
  ].join("\n");
}

function schemaRule(schema, rule) {
  if (schema === true || !schema || typeof schema !== "object") return "value";
  if ("const" in schema) return scalar(schema.const) ?? "value";
  if (Array.isArray(schema.enum)) {
    const alts = schema.enum.map(scalar);
    return alts.every(Boolean) && alts.length ? rule(alts.join(" | ")) : "value";
  }
  const alts = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alts) && alts.length) {
    return rule(alts.map((s) => schemaRule(s, rule)).join(" | "));
  }
  if (Array.isArray(schema.type)) {
    return rule(schema.type.map((type) => schemaRule({ ...schema, type }, rule)).join(" | "));
  }
  switch (schema.type) {
    case "string":
    case "number":
    case "integer":
    case "boolean":
    case "null":
      return schema.type;
    case "array":
      return arrayRule(schema, rule);
    case "object":
      return objectRule(schema, rule);
    default:
      return "value";
  }
}

/** A JSON scalar as a literal rule, or null for anything else. */
function scalar(v) {
  return v === null || ["string", "number", "boolean"].includes(typeof v) ? esc(v) : null;
}

function arrayRule(schema, rule) {
  const item = schemaRule(schema.items, rule);
  const min = Math.max(0, schema.minItems ?? 0);
  const max = schema.maxItems;
  if (min > 8 || (max !== undefined && max > 8)) {
    return rule(`"[" ws ( ${item} ( ws "," ws ${item} )* )? ws "]"`);
  }
  // Up to 8 items spelt out, so both bounds hold.
  const top = max ?? Infinity;
  let tail = top > min ? `( ws "," ws ${item} )${Number.isFinite(top) ? `{0,${top - Math.max(min, 1)}}` : "*"}` : "";
  if (min === 0) {
    if (top === 0) return rule(`"[" ws "]"`);
    return rule(`"[" ws ( ${item} ${tail} )? ws "]"`);
  }
  const first = [item, ...Array(min - 1).fill(`ws "," ws ${item}`)].join(" ");
  return rule(`"[" ws ${first} ${tail} ws "]"`);
}

function objectRule(schema, rule) {
  const props = Object.entries(schema.properties ?? {});
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  if (!props.length) {
    // No declared properties: any object unless extra keys are refused.
    return schema.additionalProperties === false ? rule(`"{" ws "}"`) : "object";
  }
  const kv = (k, s) => `${esc(k)} ws ":" ws ${schemaRule(s, rule)}`;
  const req = props.filter(([k]) => required.has(k)).map(([k, s]) => kv(k, s));
  const opt = props.filter(([k]) => !required.has(k)).map(([k, s]) => kv(k, s));
  // Optional properties after the required ones, each with its comma, in their order.
  const tail = opt.map((p) => `( ws "," ws ${p} )?`).join(" ");
  if (req.length) {
    return rule(`"{" ws ${req.join(` ws "," ws `)} ${tail} ws "}"`);
  }
  // None required: the first present optional property has no comma before it.
  let firsts = "";
  for (let i = opt.length - 1; i >= 0; i--) {
    const rest = opt.slice(i + 1).map((p) => `( ws "," ws ${p} )?`).join(" ");
    firsts = rule(`${opt[i]} ${rest}${firsts ? ` | ${firsts}` : ""}`);
  }
  return rule(`"{" ws ( ${firsts} )? ws "}"`);
}

/**
 * Reads what the grammar let the model write: `{ text }` or `{ calls: [{ name, arguments }] }`.
 * Anything else (a call cut off by the token limit) is `{ broken }`, the text as it was.
 */
export function readAnswer(raw) {
  if (!raw.startsWith(CALL_OPEN)) return { text: raw };
  const end = raw.lastIndexOf(CALL_CLOSE);
  try {
    if (end < 0) throw new Error("no end");
    const calls = JSON.parse(raw.slice(CALL_OPEN.length, end));
    if (!Array.isArray(calls)) throw new Error("not a list");
    return { calls };
  } catch {
    return { broken: raw };
  }
}

/** The system prompt's description of the tools and of the call syntax. */
export function toolPrompt(tools) {
  const list = tools.map((t) => ({ name: t.name, description: t.description ?? "", parameters: t.parameters }));
  return [
    "You can call these tools:",
    `<tools>${JSON.stringify(list)}</tools>`,
    `To call tools, answer with only ${CALL_OPEN}[{"name": "tool_name", "arguments": {...}}]${CALL_CLOSE}.`,
    "Otherwise answer in plain text.",
  ].join("\n");
}
