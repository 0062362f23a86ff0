import { glossaryDir, offlineModelDir, type ThymosConfig } from '../../shared/config/index.js';
import { StaticEmbedder } from '../../shared/platform/index.js';
import { Glossary } from './glossary.js';

/** The custom model of `[embedding] model_dir`, a candidate to read plain words with (`readWords` says whether it can). */
export function customWordsModel(config: ThymosConfig): string | undefined {
  return config.embedding.model === 'custom' ? config.embeddingModelPath : undefined;
}

/** What plain words are read with: the offline model's word vectors (none: words alone) and the glossaries for other languages. */
export interface WordsReader {
  embedder: StaticEmbedder | undefined;
  /** The folder the model was read from; undefined on words alone. */
  modelDir: string | undefined;
  glossary: Glossary | undefined;
  /** What could not be read, each with its folder and why: for the log, or the command's stderr. */
  warnings: string[];
}

/**
 * Reads the model plain words are read with: `custom` when it is a static model as `npm run
 * build:model` builds one (the fleet's recall uses it too), else models/glove-100d of the Thymos
 * install, since a sentence model has no word vectors to read an intent's words with. A custom
 * model that cannot be read leaves the install's in use, and no model at all words alone; each is
 * a warning, with the folder and why. The glossaries are those of `glossary`, else
 * models/glossary of the install, read when an intent in their language first comes.
 *
 * @param resident whether the whole model is read into memory (a batch of many intents) or its
 *   rows from the file as needed (an agent, which reads a few words now and then)
 */
export function readWords(options: { custom?: string | undefined; glossary?: string | undefined; resident: boolean }): WordsReader {
  const dirs = [
    ...(options.custom !== undefined && StaticEmbedder.isStaticModel(options.custom) ? [options.custom] : []),
    offlineModelDir(),
  ];
  let embedder: StaticEmbedder | undefined;
  let modelDir: string | undefined;
  const warnings: string[] = [];
  for (const dir of dirs) {
    try {
      embedder = StaticEmbedder.load(dir, { maxLength: 256, resident: options.resident });
      modelDir = dir;
      break;
    } catch (err) {
      const what =
        dir === dirs.at(-1)
          ? 'intent resolution runs on words only: the offline model'
          : 'plain words are read with the model Thymos ships: the model of [embedding] model_dir';
      warnings.push(`${what} at ${dir} could not be read (${(err as Error).message})`);
    }
  }
  const glossary = Glossary.load(options.glossary ?? glossaryDir(), embedder?.wordsByFrequency && (() => embedder!.wordsByFrequency()));
  return { embedder, modelDir, glossary, warnings };
}
