import { z } from 'zod';

/** A request to `<fleet>.embed`: texts to turn into vectors. */
export const EmbedRequestSchema = z
  .object({
    texts: z.array(z.string().max(100_000)).min(1).max(1024),
  })
  .strict();

/** `<fleet>.embed.info` and every embed reply: which model, how long its vectors are. */
export const EmbedInfoSchema = z.object({ model: z.string(), dims: z.number().int().positive() });

/** The result: vectors as little-endian float32, base64, one after another. */
export const EmbedReplySchema = EmbedInfoSchema.extend({ vectors: z.string() });
/** The fields of a successful reply on `<fleet>.embed`: `{ ok: true, result }`. */
export const EmbedOkSchema = z.object({ result: EmbedReplySchema });

export function encodeVectors(vectors: readonly Float32Array[]): string {
  const dims = vectors[0]?.length ?? 0;
  const all = new Float32Array(vectors.length * dims);
  vectors.forEach((v, i) => all.set(v, i * dims));
  return Buffer.from(all.buffer).toString('base64');
}

export function decodeVectors(text: string, dims: number): Float32Array[] {
  const bytes = Buffer.from(text, 'base64');
  const all = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const out: Float32Array[] = [];
  for (let i = 0; i + dims <= all.length; i += dims) out.push(all.slice(i, i + dims));
  return out;
}
