'use strict';
// The part of JSON Schema 2020-12 that spec/schemas/ uses, over the values json.js parses.
// Two rules are stricter than the draft's, as the documents ask: an `integer` is a number
// written without a fraction or an exponent (PROTO-3, PROTO-16: never 3.0 or 1e3), and a
// member the schema does not require is never null (FIX-17).
const fs = require('node:fs');
const path = require('node:path');
const { parse } = require('./json.js');

// Keywords that only annotate; any other keyword this validator does not know is refused when a
// schema is loaded, so that a schema using more than it checks cannot pass unchecked.
const ANNOTATIONS = new Set(['$id', '$schema', '$defs', 'title', 'description', 'default', 'discriminator']);
const ASSERTIONS = new Set(['$ref', 'type', 'const', 'enum', 'anyOf', 'oneOf', 'properties', 'required',
  'additionalProperties', 'items', 'prefixItems', 'minItems', 'maxItems', 'minimum', 'maximum', 'pattern']);

class SchemaError extends Error {}

function loadSchema(file) {
  let root;
  try {
    root = parse(fs.readFileSync(file, 'utf8')).value;
  } catch (e) {
    throw new SchemaError(`${file}: cannot be read as JSON: ${e.message}`);
  }
  checkKeywords(root, file);
  return root;
}

function checkKeywords(schema, file) {
  for (const [k, v] of Object.entries(schema)) {
    if (!ANNOTATIONS.has(k) && !ASSERTIONS.has(k)) throw new SchemaError(`${file}: keyword ${k} is not supported`);
    if (k === '$defs' || k === 'properties') Object.values(v).forEach((s) => checkKeywords(s, file));
    if (k === 'anyOf' || k === 'oneOf' || k === 'prefixItems') v.forEach((s) => checkKeywords(s, file));
    if ((k === 'items' || k === 'additionalProperties') && typeof v === 'object') checkKeywords(v, file);
  }
}

function typeOf(v) {
  if (v === null) return 'null';
  if (typeof v === 'bigint') return 'integer';
  if (typeof v === 'number') return 'number';
  if (Array.isArray(v)) return 'array';
  return typeof v; // string, boolean, object
}

function equal(a, b) {
  if (typeof a === 'number' || typeof b === 'number') return typeof a === typeof b && Object.is(a, b);
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => equal(x, b[i]));
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return equal(ka, kb) && ka.every((k) => equal(a[k], b[k]));
  }
  return a === b;
}

const at = (where, key) => (typeof key === 'number' ? `${where}[${key}]` : where ? `${where}.${key}` : key);

// The first error, as "where: what", or null when the value matches.
function validate(schema, value, root = schema, where = '') {
  if (schema.$ref !== undefined) {
    const name = schema.$ref.replace(/^#\/\$defs\//, '');
    const error = validate(root.$defs[name], value, root, where);
    if (error) return error;
  }
  const here = where || '(the whole)';
  const t = typeOf(value);
  if (schema.type !== undefined) {
    const ok = schema.type === t || (schema.type === 'number' && t === 'integer');
    if (!ok) return `${here}: ${t} where the schema wants ${schema.type}`;
  }
  if (schema.const !== undefined && !equal(schema.const, value)) return `${here}: not ${JSON.stringify(String(schema.const))}`;
  if (schema.enum !== undefined && !schema.enum.some((e) => equal(e, value))) return `${here}: not one of ${schema.enum.map(String).join(', ')}`;
  if (schema.anyOf !== undefined) {
    const errors = schema.anyOf.map((s) => validate(s, value, root, where));
    if (errors.every((e) => e)) return errors[0];
  }
  if (schema.oneOf !== undefined) {
    const errors = schema.oneOf.map((s) => validate(s, value, root, where));
    const matched = errors.filter((e) => !e).length;
    if (matched !== 1) return matched ? `${here}: matches ${matched} of oneOf` : bestOf(errors, schema.oneOf, value, root);
  }
  if (t === 'integer' || t === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) return `${here}: below ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `${here}: above ${schema.maximum}`;
  }
  if (t === 'string' && schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) {
    return `${here}: does not match ${schema.pattern}`;
  }
  if (t === 'array') return validateArray(schema, value, root, where);
  if (t === 'object') return validateObject(schema, value, root, where);
  return null;
}

// Of a oneOf none of whose branches matches, the error of the branch whose `kind` constant the
// value names (the schema's discriminator), or the first.
function bestOf(errors, branches, value, root) {
  const i = branches.findIndex((b) => {
    const s = b.$ref ? root.$defs[b.$ref.replace(/^#\/\$defs\//, '')] : b;
    return s.properties && s.properties.kind && s.properties.kind.const === value.kind;
  });
  return errors[Math.max(i, 0)];
}

function validateArray(schema, value, root, where) {
  const here = where || '(the whole)';
  if (schema.minItems !== undefined && value.length < schema.minItems) return `${here}: fewer than ${schema.minItems} items`;
  if (schema.maxItems !== undefined && value.length > schema.maxItems) return `${here}: more than ${schema.maxItems} items`;
  const prefix = schema.prefixItems || [];
  for (let i = 0; i < value.length; i++) {
    const s = i < prefix.length ? prefix[i] : schema.items;
    if (s === false) return `${at(where, i)}: an item too many`;
    const error = s && typeof s === 'object' ? validate(s, value[i], root, at(where, i)) : null;
    if (error) return error;
  }
  return null;
}

function validateObject(schema, value, root, where) {
  const props = schema.properties || {};
  const required = schema.required || [];
  for (const name of required) {
    if (!(name in value)) return `${at(where, name)}: missing`;
  }
  for (const [name, v] of Object.entries(value)) {
    if (name in props) {
      if (v === null && !required.includes(name)) return `${at(where, name)}: null for a field that may only be absent (FIX-17)`;
      const error = validate(props[name], v, root, at(where, name));
      if (error) return error;
    } else if (schema.additionalProperties === false) {
      return `${at(where, name)}: a field the schema does not have`;
    } else if (typeof schema.additionalProperties === 'object') {
      const error = validate(schema.additionalProperties, v, root, at(where, name));
      if (error) return error;
    }
  }
  return null;
}

// The schemas of spec/schemas/ by their path under it, loaded once.
function schemas(specDir) {
  const cache = new Map();
  return (name) => {
    if (!cache.has(name)) cache.set(name, loadSchema(path.join(specDir, 'schemas', name)));
    return cache.get(name);
  };
}

module.exports = { validate, schemas, SchemaError };
