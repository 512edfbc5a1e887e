export { ForgebenchGateway, ForgebenchGatewayProps, FunctionCode, CANONICAL_AUTHORIZATION, defaultOpenApiPath, functionCodeFromContext, repositoryRoot } from './gateway';
export { FUNCTIONS, FunctionSpec, Grant, ResourceKind, EnvValue, Trigger } from './functions';
export { TABLE, TABLE_ATTRIBUTES, TABLE_INDEXES, TABLE_KEY, TTL_ATTRIBUTE } from './table';
export { ForgebenchStack, ForgebenchStackProps } from './stack';
