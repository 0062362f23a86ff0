import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';

import { Glossary } from '../../../agent/intents/glossary.js';
import { buildGlossaries, renderingsOf } from '../../../agent/intents/glossary-build.js';
import { IntentResolver } from '../../../agent/intents/intent-resolver.js';
import { loadDomainSchema } from '../../../shared/domain/domain-schema.js';
import type { Tools } from '../../../shared/domain/tool-schema.js';
import { ErrorCode, ThymosError } from '../../../shared/errors/errors.js';
import { StaticEmbedder } from '../../../shared/platform/static-embedder.js';
import { writeDictionary } from '../../helpers/dictd.js';
import { ensureModel } from '../../helpers/embedding-model.js';
import { fuzzStrings } from '../../helpers/fuzz.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { REPO_ROOT, THYMOS_BIN } from '../../helpers/workspace.js';

const NOW = new Date('2026-06-10T09:00:00');
const DEU: Array<[string, string]> = [
  ['00databaseinfo', '00databaseinfo\nThis is the German-English FreeDict dictionary\n'],
  ['Bestellung', 'Bestellung /bəʃtˈɛlʊŋ/ <fem, n, sg>\ncommission <n>\n   Synonyms: {Auftrag}\n\n'],
  [
    'Bestellung',
    'Bestellung /bəʃtˈɛlʊŋ/ <fem, n, sg>\npurchase order <n>, order <n>\n      "laut Ihrer Bestellung"  - as per your order\n\n',
  ],
  ['Bestellung', 'Bestellung /bəʃtˈɛlʊŋ/ <fem, n, sg>\norder <n>, ordering <n>\n\n'],
  ['stornieren', 'stornieren /ʃtɔʁˈniːʁən/ <v>\nto cancel, to reverse\n\n'],
  ['Liste', 'Liste <fem, n, sg>\nlist <n>, listing <n>\n\n'],
  ['Aufgabe', 'Aufgabe <fem, n, sg>\ntask <n>\n\n'],
  ['bitte', 'bitte\nplease\n\n'],
  ['die', 'die\nthe\n\n'],
  ['meine', 'meine\nmy\n\n'],
  ['auf Wiedersehen', 'auf Wiedersehen\ngoodbye\n\n'],
  ['ein sehr langer Ausdruck hier', 'ein sehr langer Ausdruck hier\na long phrase\n\n'],
];
const FRA: Array<[string, string]> = [
  ['annuler', 'annuler /anyle/ <v>\n1. cancel\n2. annul, call off\n'],
  ['commande', 'commande /kɔmɑ̃d/ <n, fem>\norder\n'],
  ['adresse', 'adresse /adʁɛs/ <n, fem>\naddress\n'],
  ['changer', 'changer /ʃɑ̃ʒe/ <v>\nchange, alter\n'],
  ['mon', 'mon\nmy\n'],
  ['ma', 'ma\nmy\n'],
  ['de', 'de\nof, from\n'],
  ['pas', 'pas\npace, step, not\n'],
  ['veux', 'veux\nwant\n'],
];

/**
 * Intents in French, Spanish and German read word by word into English through glossaries built
 * from FreeDict dictionaries in dictd's format: a dictionary made here for the edge cases, and
 * Debian's French one (dict-freedict-fra-eng, which .ci/run installs) for real words.
 */
describe('glossaries for intents in other languages', () => {
  let support: Tools;
  let embedder: StaticEmbedder;
  let glossaryDir: string;

  before(async () => {
    support = (await loadDomainSchema(join(REPO_ROOT, 'examples', 'support', 'tools.pkl'))).tools;
    embedder = StaticEmbedder.load(ensureModel(), { maxLength: 256 });
    const dicts = tempDir('thymos-dict-');
    writeDictionary(dicts, 'deu-eng', DEU);
    writeDictionary(dicts, 'fra-eng', FRA);
    glossaryDir = join(tempDir('thymos-glossary-'), 'glossary');
    assert.deepEqual(buildGlossaries(dicts, glossaryDir), { fra: 9, deu: 8 });
  });

  test('a headword keeps its English renderings, the most often given first, then the shortest; phrases of up to three words; no notes, examples or dictd entries', () => {
    const deu = readFileSync(join(glossaryDir, 'deu.tsv'), 'utf8').split('\n');
    assert.ok(deu.includes('bestellung\torder|commission|ordering|purchase order'), deu.join('\n'));
    assert.ok(deu.includes('stornieren\tcancel|reverse'));
    assert.ok(deu.includes('auf wiedersehen\tgoodbye'));
    assert.ok(!deu.some((l) => l.startsWith('00') || l.startsWith('ein sehr')));
    assert.deepEqual([...deu.filter(Boolean)].sort(), deu.filter(Boolean), "sorted, for the reader's binary search");
    assert.deepEqual(
      renderingsOf('x /ipa/\n1. cancel <v>\n2. annul [law], to call off (a plan)\n   Note: formal\n   Synonyms: {y}\n\nafter'),
      ['cancel', 'annul', 'call off'],
    );
  });

  test('an English-to-French dictionary beside it is read backwards: the words that render an English word take it as their English', () => {
    const dicts = tempDir('thymos-dict-both-');
    writeDictionary(dicts, 'fra-eng', FRA);
    writeDictionary(dicts, 'eng-fra', [
      ['cancel', 'cancel /kænsəl/\nannuler, résilier\n'],
      ['password', 'password /pæswɜːd/\nmot de passe\n'],
      ['Delivery', 'Delivery\nlivraison\n'],
      ['3D', '3D\ntrois\n'],
    ]);
    const out = join(tempDir('thymos-glossary-both-'), 'glossary');
    assert.deepEqual(buildGlossaries(dicts, out), { fra: 12 });
    const fra = readFileSync(join(out, 'fra.tsv'), 'utf8').split('\n');
    assert.ok(fra.includes('annuler\tcancel|annul|call off'), 'given by both: counted twice, first');
    assert.ok(fra.includes('résilier\tcancel'));
    assert.ok(fra.includes('mot de passe\tpassword'));
    assert.ok(fra.includes('livraison\tdelivery'));
    assert.ok(!fra.some((l) => l.startsWith('trois')), 'an English headword that is no word is not read');
    assert.equal(Glossary.load(out)!.read("J'ai oublié mon mot de passe ma commande")!.text.includes('password'), true);
  });

  test('a word is read as itself, as a form of a headword, or as a compound by its head; ids, numbers and quoted text are kept; short words the glossary knows are left out ("de"), others kept ("sie", a name)', () => {
    const glossary = Glossary.load(glossaryDir)!;
    const german = glossary.read('Bitte stornieren Sie meine Bestellungen ORD-12345 und die Aufgabenliste "Steuer 2024"')!;
    assert.equal(german.language, 'deu');
    assert.equal(german.text, 'please cancel reverse sie my order commission ORD-12345 und task list task listing "Steuer 2024"');
    const french = glossary.read("Changez l'adresse de ma commande ORD-12345")!;
    assert.equal(french.language, 'fra');
    assert.equal(french.text, 'change alter address order ORD-12345');
    assert.equal(
      glossary.read('Je ne veux pas annuler ma commande ORD-12345')!.text,
      'je ne want not cancel annul order ORD-12345',
      'a negation is kept, though short (je and ne this glossary does not know)',
    );
    assert.equal(
      glossary.read('Bitte stornieren Sie meine Bestellung'.normalize('NFD'))!.text,
      glossary.read('Bitte stornieren Sie meine Bestellung')!.text,
      'decomposed letters are read as composed ones',
    );
    assert.equal(glossary.read('我想取消我的订单 ORD-12345'), undefined, 'no glossary knows a third of its words');
    assert.equal(glossary.read('ORD-12345 12'), undefined, 'no words to read');
    assert.equal(glossary.read('ma de ORD-12345'), undefined, 'nothing but an id would be left: not read');
    const hyphens = glossary.read(`die der und ist ${'tu-'.repeat(494)}tu`)!;
    assert.ok(hyphens === undefined || hyphens.text.length <= 2_000, 'a gloss is no longer than an intent may be');
    assert.equal(glossary.read(`bitte ${'stornieren '.repeat(150)}`)!.text.length, 2_000);
    for (const text of [
      ...fuzzStrings(300, 45),
      `die meine ${'bestellungx'.repeat(180)}`,
      'die meine '.repeat(200),
      `die der und ist ${'sichx '.repeat(330)}`,
    ])
      assert.doesNotThrow(() => glossary.read(text), text);
    assert.equal(Glossary.load(tempDir('thymos-none-')), undefined, 'no glossary built: none to read');
  });

  test('the resolver reads an intent in another language through the glossary, says so, and holds it to the bars an English one meets', async () => {
    const resolver = await IntentResolver.build(support, { embedder, glossary: Glossary.load(glossaryDir) });
    const a = await resolver.resolve("Je veux annuler ma commande ORD-12345, j'ai changé d'avis", undefined, NOW);
    assert.notEqual(a.outcome, 'unsupported_language', JSON.stringify(a));
    assert.equal(a.candidates[0]!.tool, 'cancel_order', JSON.stringify(a));
    assert.match(a.note ?? '', /read through the fra glossary as: .*cancel.*order ORD-12345/);
    assert.ok(['call', 'incomplete'].includes(a.outcome), a.outcome);
    assert.equal((a.call?.arguments ?? a.arguments)?.order_id, 'ORD-12345', 'the id is read from the gloss');
    const none = await resolver.resolve('我想取消我的订单 ORD-12345', undefined, NOW);
    assert.equal(none.outcome, 'unsupported_language');
    assert.equal(none.call, undefined);
    const without = await IntentResolver.build(support, { embedder });
    assert.equal(
      (await without.resolve("Je veux annuler ma commande ORD-12345, j'ai changé d'avis", undefined, NOW)).outcome,
      'unsupported_language',
      'no glossary: read as before, no call',
    );
  });

  test('a line with one common word of a language is read through its glossary when that knows more of its words than English does', async () => {
    const english = () => ['the', 'my', 'order', 'cancel', 'now', 'for', 'and', 'ma', 'pa', 'de', 'paris', 'table', 'at', 'book'];
    const glossary = Glossary.load(glossaryDir, english)!;
    assert.equal(glossary.outreadsEnglish('Annuler ma commande ORD-12345 maintenant'), true);
    assert.equal(glossary.outreadsEnglish('cancel the order for ma and pa'), false, 'English, though "ma" is a French word');
    assert.equal(glossary.outreadsEnglish('book a table at la maison de paris'), false);
    assert.equal(
      Glossary.load(glossaryDir)!.outreadsEnglish('Annuler ma commande ORD-12345 maintenant'),
      false,
      'nothing to weigh it against',
    );
    const resolver = await IntentResolver.build(support, {
      embedder,
      glossary: Glossary.load(glossaryDir, () => embedder.wordsByFrequency()),
    });
    const a = await resolver.resolve('Annuler ma commande ORD-12345 maintenant', undefined, NOW);
    assert.match(a.note ?? '', /read through the fra glossary as: .*cancel.* order ORD-12345/, JSON.stringify(a));
    assert.equal(a.candidates[0]!.tool, 'cancel_order');
  });

  test('bad dictionaries are refused by file and line, and a failed build leaves the glossary that was there', () => {
    const bad = tempDir('thymos-dict-bad-');
    writeFileSync(join(bad, 'freedict-fra-eng.index'), 'annuler\tA\n');
    writeFileSync(join(bad, 'freedict-fra-eng.dict.dz'), gzipSync('annuler\ncancel\n'));
    assert.throws(
      () => buildGlossaries(bad, glossaryDir),
      (e: unknown) =>
        e instanceof ThymosError &&
        e.code === ErrorCode.INVALID_INPUT &&
        /freedict-fra-eng\.index line 1: expected headword, offset and length/.test(e.message),
    );
    writeFileSync(join(bad, 'freedict-fra-eng.index'), 'annuler\tA!\tB\n');
    assert.throws(() => buildGlossaries(bad, glossaryDir), /line 1: expected a base-64 offset or length, got "A!"/);
    writeFileSync(join(bad, 'freedict-fra-eng.index'), 'annuler\t\tB\n');
    assert.throws(() => buildGlossaries(bad, glossaryDir), /line 1: expected a base-64 offset or length, got nothing/);
    writeFileSync(join(bad, 'freedict-fra-eng.index'), 'annuler\tA\tB\n');
    writeFileSync(join(bad, 'freedict-fra-eng.dict.dz'), 'not gzip');
    assert.throws(() => buildGlossaries(bad, glossaryDir), /freedict-fra-eng\.dict\.dz: expected a dictzip \(gzip\) file/);
    assert.throws(
      () => buildGlossaries(tempDir('thymos-dict-empty-'), glossaryDir),
      (e: unknown) => e instanceof ThymosError && e.code === ErrorCode.NOT_FOUND && /apt-get install dict-freedict-fra-eng/.test(e.message),
    );
    rmSync(join(bad, 'freedict-fra-eng.dict.dz'));
    assert.throws(() => buildGlossaries(bad, glossaryDir), /freedict-fra-eng\.index has no .*freedict-fra-eng\.dict\.dz beside it/);
    assert.throws(
      () => buildGlossaries(join(bad, 'freedict-fra-eng.index'), glossaryDir),
      (e: unknown) => e instanceof ThymosError && e.code === ErrorCode.INVALID_INPUT && /is a file: expected the folder/.test(e.message),
    );
    assert.ok(readFileSync(join(glossaryDir, 'deu.tsv'), 'utf8').includes('bestellung\t'), 'the glossary built before is still there');
  });

  test('a build that replaces a glossary leaves nothing of its own beside it', () => {
    const dicts = tempDir('thymos-dict-again-');
    writeDictionary(dicts, 'fra-eng', FRA);
    const out = join(tempDir('thymos-glossary-again-'), 'glossary');
    buildGlossaries(dicts, out);
    writeDictionary(dicts, 'fra-eng', FRA.slice(0, 3));
    assert.deepEqual(buildGlossaries(dicts, out), { fra: 3 });
    assert.deepEqual(readdirSync(dirname(out)), ['glossary']);
    assert.deepEqual(readdirSync(out).sort(), ['README.md', 'fra.tsv']);
    // Where it cannot write (a file stands where its folder would go): WRITE_FAILED, and the file is left as it was.
    const blocked = join(tempDir('thymos-glossary-blocked-'), 'models');
    writeFileSync(blocked, 'not a folder');
    assert.throws(
      () => buildGlossaries(dicts, join(blocked, 'glossary')),
      (e: unknown) =>
        e instanceof ThymosError &&
        e.code === ErrorCode.WRITE_FAILED &&
        /cannot write the glossaries into .*models\/glossary/.test(e.message),
    );
    assert.equal(readFileSync(blocked, 'utf8'), 'not a folder');
  });

  test("thymos glossary builds into --out, else the config's [tools] glossary_dir, and says what it built", () => {
    const dicts = tempDir('thymos-dict-cli-ok-');
    writeDictionary(dicts, 'fra-eng', FRA);
    const out = join(tempDir('thymos-glossary-cli-'), 'g');
    const run = spawnSync(process.execPath, [THYMOS_BIN, 'glossary', '--from', dicts, '--out', out, '--json'], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { glossary: out, words: { fra: 9 } });
    assert.match(readFileSync(join(out, 'fra.tsv'), 'utf8'), /^annuler\tcancel\|annul\|call off$/m);
    const project = tempDir('thymos-glossary-config-');
    writeFileSync(join(project, 'thymos.toml'), '[tools]\nglossary_dir = "words"\n');
    const byConfig = spawnSync(process.execPath, [THYMOS_BIN, 'glossary', '--from', dicts, '--config', join(project, 'thymos.toml')], {
      encoding: 'utf8',
    });
    assert.equal(byConfig.status, 0, byConfig.stderr);
    assert.match(byConfig.stdout, new RegExp(`^built ${join(project, 'words')} \\(fra: 9 words\\) in \\d+ ms\n$`));
    assert.ok(existsSync(join(project, 'words', 'fra.tsv')));
  });

  test('thymos glossary with no dictionary where it looks: NOT_FOUND, exit 2, nothing written', () => {
    const empty = tempDir('thymos-dict-cli-');
    mkdirSync(join(empty, 'sub'));
    const run = spawnSync(process.execPath, [THYMOS_BIN, 'glossary', '--from', join(empty, 'sub'), '--out', join(empty, 'out'), '--json'], {
      encoding: 'utf8',
    });
    assert.equal(run.status, 2, run.stderr);
    assert.match(
      run.stderr,
      /NOT_FOUND: no FreeDict dictionary in .*sub: expected freedict-fra-eng, freedict-spa-eng, freedict-deu-eng \(or freedict-eng-fra and the like\), each an \.index and a \.dict\.dz/,
    );
    assert.equal(run.stdout, '');
    assert.ok(!existsSync(join(empty, 'out')));
  });

  test(
    "Debian's French dictionary: a French intent takes the tool an English one would",
    { skip: !existsSync('/usr/share/dictd/freedict-fra-eng.index') && 'dict-freedict-fra-eng is not installed' },
    async () => {
      const dir = join(tempDir('thymos-glossary-fra-'), 'glossary');
      const built = buildGlossaries('/usr/share/dictd', dir);
      assert.ok((built.fra ?? 0) > 5000, JSON.stringify(built));
      const resolver = await IntentResolver.build(support, { embedder, glossary: Glossary.load(dir, () => embedder.wordsByFrequency()) });
      const a = await resolver.resolve("Je voudrais annuler ma commande ORD-12345 avant qu'elle parte", undefined, NOW);
      assert.equal(a.candidates[0]!.tool, 'cancel_order', JSON.stringify(a));
      assert.match(a.note ?? '', /read through the fra glossary/);
    },
  );
});
