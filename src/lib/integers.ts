/**
 * The largest integer an `integer` column holds on PostgreSQL (32 bits), in the service's store and
 * the sandbox's alike. An input kept in such a column has it as its maximum: a larger value would
 * pass validation and then fail in the store.
 */
export const INT32_MAX = 2_147_483_647;
