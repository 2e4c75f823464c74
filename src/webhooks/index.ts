export { startWebhookReceiver, assertUsableSecret, type WebhookReceiver, type WebhookReceiverOptions } from './server.ts';
export { applyWebhookEvent, type ApplyOptions, type ApplyResult } from './apply.ts';
export { validateEvent, redactEvent, type WebhookEvent, type Validation } from './events.ts';
export { eventId, eventPath, listEventRecords, EVENTS_PREFIX, type EventRecord } from './event-log.ts';
export { purgeSchool, selectSchoolPaths, type PurgeResult } from './purge.ts';
export { tokenFilePath } from './token-store.ts';
