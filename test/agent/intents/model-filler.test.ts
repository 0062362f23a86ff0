import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { IntentResolver } from '../../../agent/intents/intent-resolver.js';
import { modelFiller } from '../../../agent/intents/model-filler.js';
import type { GenerateResult } from '../../../agent/llm/llm-provider.js';
import { OpenAiCompatibleProvider } from '../../../agent/llm/openai-compatible-provider.js';
import { loadDomainSchema } from '../../../shared/domain/domain-schema.js';
import { grantedTools, type Tools } from '../../../shared/domain/tool-schema.js';
import { StaticEmbedder } from '../../../shared/platform/static-embedder.js';
import { ensureModel } from '../../helpers/embedding-model.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

/** With a model configured, the arguments come from its structured output, checked field by field; a failing model leaves them to the offline filler. */
describe('arguments filled by a model', () => {
  let answer: (res: ServerResponse) => void = (res) => res.writeHead(500).end();
  const asked: Array<{ messages: Array<{ content: string }>; response_format?: unknown }> = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      asked.push(JSON.parse(raw) as (typeof asked)[number]);
      answer(res);
    });
  });
  const spent: GenerateResult[] = [];
  let resolver: IntentResolver;

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const provider = new OpenAiCompatibleProvider({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, model: 'stand-in', temperature: 0, maxTokens: 128, timeoutMs: 3000, maxRetries: 0 });
    const village = await loadDomainSchema(join(REPO_ROOT, 'examples', 'village', 'world.pkl'));
    const tools: Tools = grantedTools(village.tools, village.agents.captain_lysa!.capabilities);
    resolver = await IntentResolver.build(tools, { embedder: StaticEmbedder.load(ensureModel(), { maxLength: 256 }), model: modelFiller(tools, () => provider, (_p, r) => spent.push(r)) });
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const reply = (content: unknown) => (res: ServerResponse) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ model: 'stand-in', choices: [{ message: { role: 'assistant', content: JSON.stringify(content) }, finish_reason: 'stop' }], usage: { prompt_tokens: 50, completion_tokens: 20 } }));

  test('the model fills what the words say without naming fields; its answer is checked field by field', async () => {
    answer = reply({ id: 'wolves', title: 'Drive the wolves off the north pasture', location: 'north_pasture', reward: 'forty silver', invented: 1, constructor: 'x', __proto__: 'y' });
    const a = await resolver.resolve('post a quest for adventurers to drive the wolves off the north pasture, forty silver for it');
    assert.equal(a.outcome, 'incomplete', JSON.stringify(a));
    assert.deepEqual(a.missing, ['reward'], 'a reward that is not an integer is refused, not coerced');
    assert.match(asked.at(-1)!.messages[0]!.content, /- reward \(required, integer\): Silver paid/);
    assert.ok(asked.at(-1)!.response_format, 'asked in JSON mode');
    assert.equal(spent.length, 1, 'what it cost is counted');
    answer = reply({ id: 'wolves', title: 'Drive the wolves off the north pasture', location: 'north_pasture', reward: 40 });
    const b = await resolver.resolve('post a quest for adventurers to drive the wolves off the north pasture, forty silver for it');
    assert.deepEqual(b.call, { tool: 'post_quest', arguments: { id: 'wolves', title: 'Drive the wolves off the north pasture', location: 'north_pasture', reward: 40 } });
  });

  test('a model that fails leaves the arguments to the offline filler', async () => {
    answer = (res) => res.writeHead(503).end('busy');
    const a = await resolver.resolve('post a quest "Clear the mill cellar", id cellar, location mill, reward 15');
    assert.deepEqual(a.call, { tool: 'post_quest', arguments: { id: 'cellar', title: 'Clear the mill cellar', location: 'mill', reward: 15 } });
  });
});
