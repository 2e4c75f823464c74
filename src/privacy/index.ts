/**
 * Personal data: the data map, the policy and its compiled per-table transforms, pseudonyms.
 * Everything here is pure and synchronous except config.ts, which reads the key file once.
 *
 *   resolvePersonalData(cfg, keyFile, tables)  -> { policy, key? }     config time; ConfigError (exit 2)
 *   createPersonalData(policy, key?)          -> PersonalData          once per run
 *   pd.transformFor(schema)                   -> ((rows) => void) | undefined  rows after flattening, before writing
 *   pd.record / pd.fingerprint                                         manifest `personal_data` / state per resource
 *   compilePolicy(schema, policy, pseudonymise?)                       the same for one table, without the run's memo
 *   createPseudonymiser(key)(value)           -> 'p_…'                 e.g. to look up a pseudonymised id
 *   dataMap(tables), classifyColumn(schema, column), classifyName(table, column)
 *   dataMapRows(tables, policy, seen)                                  every column, its class, source and action (datamap)
 *   checkDestination(store, input)             -> GuardResult          a destination keeps its policy and format (exit 2)
 *   new Tightening(o).watch(school, piece) / .finish(now)             purges what a stricter policy replaced
 *   renderPersonalDataDoc()                                            docs/personal-data.md
 */
export { compilePolicy, type RowTransform } from './compile.ts';
export { classifyColumn, type ColumnClass } from './classify.ts';
export { createPersonalData, type PersonalData } from './personal-data.ts';
export {
  KEEP_ALL,
  CLASS_ACTIONS,
  policyOf,
  classAction,
  describePolicy,
  isKeepAll,
  needsKey,
  policyFingerprint,
  policyRecord,
  type Action,
  type PersonalDataPolicy,
} from './policy.ts';
export { createPseudonymiser, PseudonymiseKey, PSEUDONYM_RE, type Pseudonymise } from './pseudonym.ts';
export { classifyName, isPersonTable, type NameClass } from './name-rules.ts';
export { dataMap, dataMapRows, renderDataMap, type DataMapRow, type DataMapTable } from './datamap.ts';
export { checkPolicyColumns } from './columns.ts';
export { checkDestination, changedBy, CHANGED_BY_ENV, type GuardResult } from './guard.ts';
export { readDestinationRecord, DESTINATION_RECORD, type DestinationRecord } from './destination.ts';
export {
  mergePersonalData,
  parsePersonalColumns,
  readKeyFile,
  resolvePersonalData,
  KEY_FILE_ENV,
  type PersonalDataConfig,
  type PersonalDataSettings,
} from './config.ts';
export { renderPersonalDataDoc } from './docs.ts';
