// closed-object.ts with its type annotations removed (Node strips types
// from .ts files but does not rewrite the ".js" import that names it).
import { Type } from "typebox";

export function closedObject(properties) {
  return Type.Object(properties, { additionalProperties: false });
}
