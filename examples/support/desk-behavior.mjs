// How the desk's agents work their tickets ([agent] behavior in thymos.toml). Each gives only
// `work`: they talk as Thymos's default does. With an [llm.reasoning] model configured, every
// agent hands its job to the model and its tool calls (`byDefault()`); offline, as here:
//
// - triage recalls which team's description fits the ticket best (its knowledge, desk.pkl) and
//   hands the ticket to that team (update_ticket), or escalates it when no team fits;
// - a specialist resolves the customer's words to one of its tools and makes the call, then
//   answers the customer (reply_to_customer); what it cannot settle it escalates;
// - the escalation desk takes the ticket over, notes it and tells the customer.
//
// Every call is made as the job, under its idempotency keys: a ticket worked twice (a retry, a
// crash) changes nothing twice.

/** A ticket's job, or why it is not one. */
function ticketOf(payload) {
  const ok =
    payload &&
    typeof payload === 'object' &&
    /^TCK-\d{5}$/.test(payload.ticket_id ?? '') &&
    typeof payload.text === 'string' &&
    payload.text.trim() !== '';
  return ok ? payload : undefined;
}

const NOT_A_TICKET = { status: 'give_up', code: 'NOT_A_TICKET', reason: 'expected {ticket_id: "TCK-#####", text, customer_id}' };

/** A call that must go through; one that does not makes the job worth another try. */
async function must(request, tool, args) {
  const record = await request.call(tool, args);
  if (record.status !== 'ok')
    throw new Error(`${tool} ${record.status}${record.error ? `: ${record.error.code} ${record.error.message}` : ''}`);
  return record;
}

/** The teams a ticket was with before, which could not settle it (the support service keeps them). */
const triedOf = (ticket) => (Array.isArray(ticket.tried) ? ticket.tried.filter((t) => typeof t === 'string') : []);

async function triage(ctx, request, ticket) {
  const tried = triedOf(ticket);
  const hits = await ctx.recall(ticket.text, { k: 3, filter: (m) => m.tags.includes('knowledge') });
  // The best team whose description shares a word with the ticket, among those that have not had it.
  const best = hits
    .map((h) => ({ team: /^(\w+) team:/.exec(h.memory.content)?.[1], bm25: h.score.bm25 }))
    .find((h) => h.team && h.bm25 > 0 && !tried.includes(h.team));
  const team = best?.team;
  // No word of the ticket is in any other team's description: a person reads it.
  if (!team) {
    const why = tried.length
      ? `none of the teams that fit could settle it (${tried.join(', ')})`
      : 'Triage could not tell which team this is for';
    await must(request, 'escalate_ticket', {
      ticket_id: ticket.ticket_id,
      tier: 'tier2',
      summary: `${why}: "${ticket.text.slice(0, 300)}"`,
      reason: 'no team fits the ticket',
    });
    return { status: 'done', note: `escalated: ${tried.length ? 'no other team fits' : 'no team fits'}` };
  }
  await must(request, 'update_ticket', { ticket_id: ticket.ticket_id, team, reason: `the ticket reads like ${team} work` });
  return { status: 'done', note: `to ${team}` };
}

async function specialist(ctx, request, ticket) {
  const { ticket_id } = ticket;
  const outcome = await request.act(ticket.text, `ticket ${ticket_id}: ${ticket.text.slice(0, 120)}`);
  const record = outcome.record;
  const what = record ? record.tool.replaceAll('_', ' ') : '';
  if (record?.status === 'ok') {
    await must(request, 'reply_to_customer', {
      ticket_id,
      message: `Done: ${what} (${JSON.stringify(record.result ?? {}).slice(0, 200)}).`,
      status_after: 'solved',
      reason: 'tell the customer it is settled',
    });
    return { status: 'done', note: `${record.tool} ok` };
  }
  if (record?.status === 'pending') {
    await must(request, 'reply_to_customer', {
      ticket_id,
      message: `Your ${what} waits for a colleague's approval; we will write as soon as it is through.`,
      status_after: 'pending_customer',
      reason: 'tell the customer what happens next',
    });
    return { status: 'done', note: `${record.tool} waits for approval (call ${record.call_id})` };
  }
  // A call that failed may go through on the next delivery; on the last, or when nothing fits, a person takes over.
  if (record && record.status !== 'refused' && !request.last)
    return { status: 'retry', reason: `${record.tool} ${record.status}`, code: record.error?.code ?? 'TOOL_FAILED' };
  // None of this team's tools fits the words, and no other team has had it: back to triage, which tries the next team that fits.
  if (!record && triedOf(ticket).length === 0) {
    await must(request, 'add_ticket_note', {
      ticket_id,
      note: `Not for ${ctx.id}: ${outcome.answer.outcome}${outcome.answer.candidates[0] ? `, nearest ${outcome.answer.candidates[0].tool}` : ''}`,
      reason: 'say why it goes back',
    });
    await must(request, 'update_ticket', { ticket_id, team: 'triage', reason: `none of ${ctx.id}'s tools fits the ticket` });
    return { status: 'done', note: 'handed back to triage' };
  }
  const why = record
    ? `${record.tool} ${record.status}`
    : `${outcome.answer.outcome}${outcome.answer.candidates[0] ? `, nearest ${outcome.answer.candidates[0].tool}` : ''}`;
  await must(request, 'escalate_ticket', {
    ticket_id,
    tier: 'tier2',
    summary: `${ctx.id} could not settle it (${why}): "${ticket.text.slice(0, 300)}"`,
    reason: 'the front line cannot settle it',
  });
  return { status: 'done', note: `escalated (${why})` };
}

async function escalation(ctx, request, ticket) {
  const { ticket_id } = ticket;
  await must(request, 'add_ticket_note', {
    ticket_id,
    note: `Taken over by ${ctx.definition.persona.name} (${request.job.payload.tier ?? 'tier2'}): ${ticket.text.slice(0, 300)}`,
    reason: 'record who has it',
  });
  await must(request, 'reply_to_customer', {
    ticket_id,
    message: 'A senior colleague has your ticket now and will write to you within a day.',
    reason: 'tell the customer who has it',
  });
  await must(request, 'update_ticket', { ticket_id, status: 'on_hold', reason: 'it waits for the senior desk' });
  return { status: 'done', note: 'taken over' };
}

export function createBehavior({ definition }) {
  const role = definition.skills.includes('triage') ? triage : definition.skills.includes('escalation') ? escalation : specialist;
  return {
    async work(ctx, request) {
      const ticket = ticketOf(request.job.payload);
      if (!ticket) return NOT_A_TICKET;
      if (ctx.model('reasoning').kind !== 'offline') return request.byDefault();
      return role(ctx, request, ticket);
    },
  };
}
