export { ForgebenchGateway, ForgebenchGatewayProps, FunctionCode, repositoryRoot } from './gateway';
export { FUNCTIONS, FunctionSpec, Grant, ResourceKind, EnvValue, Trigger } from './functions';
export { TABLE } from './table';
export { ForgebenchStack, ForgebenchStackProps } from './stack';
